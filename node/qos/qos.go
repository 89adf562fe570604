// Package qos is Dubbo's QoS port: operations commands and probes for one
// process, on one TCP port that speaks both HTTP and a line protocol, as
// Java Dubbo's does.
//
//	GET /ls        the services this process provides and consumes
//	GET /online    register the provided services again (?service=<regex>)
//	GET /offline   unregister them without stopping (?service=<regex>)
//	GET /ready     200 "true" while every service is exported and registered, else 503 "false"
//	GET /live      200 "true" while the process runs
//	GET /startup   200 "true" once start-up finished, else 503 "false"
//	GET /version   the version
//	GET /metrics   Prometheus text format
//
// A connection whose first byte is not G or P (an HTTP request) is a
// telnet session: the same commands typed one per line (`offline
// org.example.*`), answered with a `dubbo>` prompt; `quit` ends it. A
// telnet client that sends nothing gets Dubbo's welcome after half a
// second.
//
// Changes (online, offline) and ls are refused from an address that is not
// loopback unless Config.AcceptForeignIP is set (Java's
// qos.accept-foreign-ip); probes, version and metrics answer anyone who
// can reach the port.
//
// A port already in use is not fatal (two processes on one machine are
// normal): Start returns ErrPortInUse and the caller logs it and runs on.
package qos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dubbo-lab/dubbo/internal/listener"
)

// DefaultListen is Java Dubbo's QoS port, on loopback.
const DefaultListen = "127.0.0.1:22222"

// Config is the [qos] section.
type Config struct {
	// Listen is host:port; "" turns the port off. Default 127.0.0.1:22222.
	Listen string `koanf:"listen"`
	// AcceptForeignIP lets addresses other than loopback run ls, online
	// and offline. Default false, as in Java.
	AcceptForeignIP bool `koanf:"accept-foreign-ip"`
}

// ProvidedService is one service this process exports.
type ProvidedService struct {
	Key        string // [group/]interface[:version]
	Registered bool
}

// ConsumedService is one service this process references.
type ConsumedService struct {
	Key       string
	Providers int // addresses known now
}

// Node is what the commands act on: the process's providers and consumer.
// Any function may be nil (nothing of that kind runs here).
type Node struct {
	// Provided lists the exported services.
	Provided func() []ProvidedService
	// Consumed lists the referenced services.
	Consumed func() []ConsumedService
	// Online registers the exported services whose key matches pattern
	// again; it says whether any matched.
	Online func(ctx context.Context, pattern *regexp.Regexp) (bool, error)
	// Offline unregisters them, leaving them served for calls in flight.
	Offline func(ctx context.Context, pattern *regexp.Regexp) (bool, error)
	// Ready says whether the process serves everything it should, and if
	// not, why (shown in the answer after "false").
	Ready func() (bool, string)
	// Started says whether start-up finished.
	Started func() bool
	// Metrics serves GET /metrics.
	Metrics http.Handler
	// Version is what `version` answers.
	Version string
}

// ErrPortInUse is returned by Start when another process has the port.
var ErrPortInUse = errors.New("qos port already in use")

// welcomeDelay is how long a new connection may stay silent before it is
// taken for a telnet client and greeted.
const welcomeDelay = 500 * time.Millisecond

// idleTimeout closes a telnet session nobody types in (Java: 5 minutes).
const idleTimeout = 5 * time.Minute

const prompt = "dubbo>"

// Server is a running QoS port.
type Server struct {
	cfg  Config
	node Node
	log  *slog.Logger
	ln   net.Listener
	http *http.Server
	// conns hands HTTP connections to http.Server, which serves them as
	// if it had accepted them.
	conns *listener.Handoff

	wg     sync.WaitGroup
	mu     sync.Mutex
	telnet map[net.Conn]struct{}
	closed bool
}

// Start listens on cfg.Listen and serves until Close. It returns
// ErrPortInUse (wrapped) when the port is taken.
func Start(cfg Config, node Node, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.Default()
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("qos: listen on %s: %w (set qos.listen to another port, or \"\" to turn it off)", cfg.Listen, ErrPortInUse)
		}
		return nil, fmt.Errorf("qos: listen on %s: %w", cfg.Listen, err)
	}
	s := &Server{cfg: cfg, node: node, log: log.With("component", "qos"), ln: ln,
		conns: listener.NewHandoff(ln.Addr()), telnet: map[net.Conn]struct{}{}}
	s.http = &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		_ = s.http.Serve(s.conns)
	}()
	go func() {
		defer s.wg.Done()
		s.accept()
	}()
	return s, nil
}

// Addr is the address the port listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops listening and ends every session.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.telnet {
		c.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.http.Shutdown(ctx)
	s.conns.Close()
	s.wg.Wait()
	return err
}

func (s *Server) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(c)
		}()
	}
}

// serveConn tells HTTP from telnet by the first byte, as Java does.
func (s *Server) serveConn(c net.Conn) {
	br := bufio.NewReader(c)
	_ = c.SetReadDeadline(time.Now().Add(welcomeDelay))
	first, err := br.Peek(1)
	if err != nil {
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			c.Close()
			return
		}
		// A telnet client waits for the server to speak first.
		if _, err := io.WriteString(c, welcome+prompt); err != nil {
			c.Close()
			return
		}
	} else if first[0] == 'G' || first[0] == 'P' {
		_ = c.SetReadDeadline(time.Time{})
		if !s.conns.Hand(&peekedConn{Conn: c, r: br}) {
			c.Close()
		}
		return
	}
	s.serveTelnet(c, br)
}

func (s *Server) serveTelnet(c net.Conn, br *bufio.Reader) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.Close()
		return
	}
	s.telnet[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.telnet, c)
		s.mu.Unlock()
		c.Close()
	}()
	foreign := !isLoopback(c.RemoteAddr())
	for {
		_ = c.SetReadDeadline(time.Now().Add(idleTimeout))
		line, err := readLine(br)
		if err != nil {
			return
		}
		line = strings.TrimSpace(line)
		if line == "" {
			if _, err := io.WriteString(c, prompt); err != nil {
				return
			}
			continue
		}
		name, rest, _ := strings.Cut(line, " ")
		if name == "quit" || name == "exit" {
			_, _ = io.WriteString(c, "BYE!\n")
			return
		}
		var args []string
		if rest = strings.TrimSpace(rest); rest != "" {
			args = strings.Fields(rest)
		}
		ans := s.run(context.Background(), name, args, foreign)
		text := ans.text
		if ans.code == http.StatusNotFound && ans.unknown {
			text = line + " :no such command"
		}
		if _, err := io.WriteString(c, text+"\r\n"+prompt); err != nil {
			return
		}
	}
}

// maxLine bounds a telnet command (Java: 2048 bytes).
const maxLine = 2048

var errLineTooLong = errors.New("command line too long")

func readLine(br *bufio.Reader) (string, error) {
	var sb strings.Builder
	for {
		frag, isPrefix, err := br.ReadLine()
		if err != nil {
			return "", err
		}
		sb.Write(frag)
		if sb.Len() > maxLine {
			return "", errLineTooLong
		}
		if !isPrefix {
			return sb.String(), nil
		}
	}
}

// Handler serves the commands over HTTP (mounted on the QoS port; usable
// elsewhere in tests).
func (s *Server) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := strings.Trim(r.URL.Path, "/")
		if name == "metrics" && s.node.Metrics != nil {
			s.node.Metrics.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		ans := s.run(r.Context(), name, httpArgs(r), !isLoopbackString(r.RemoteAddr))
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(ans.code)
		_, _ = io.WriteString(w, ans.text)
	})
}

// httpArgs are a request's query (and form) values in key order, as
// Java's HttpCommandDecoder takes them: /offline?service=org.example.*
func httpArgs(r *http.Request) []string {
	_ = r.ParseForm()
	keys := make([]string, 0, len(r.Form))
	for k := range r.Form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var args []string
	for _, k := range keys {
		args = append(args, r.Form[k]...)
	}
	return args
}

type answer struct {
	code    int
	text    string
	unknown bool
}

// commands the port knows, with whether a foreign address may run them.
var commands = map[string]bool{
	"help": true, "ls": false, "online": false, "offline": false,
	"ready": true, "live": true, "startup": true, "version": true,
}

// run executes one command.
func (s *Server) run(ctx context.Context, name string, args []string, foreign bool) answer {
	public, known := commands[name]
	if !known {
		return answer{code: http.StatusNotFound, text: "no such command: " + name, unknown: true}
	}
	if foreign && !public && !s.cfg.AcceptForeignIP {
		s.log.Warn("qos command from a foreign address refused", "command", name)
		return answer{code: http.StatusForbidden,
			text: "Foreign Ip Not Permitted: set qos.accept-foreign-ip = true to allow " + name + " from other hosts"}
	}
	switch name {
	case "help":
		return answer{code: http.StatusOK, text: helpText}
	case "ls":
		return answer{code: http.StatusOK, text: s.ls()}
	case "online", "offline":
		return s.change(ctx, name, args)
	case "ready":
		ok, why := true, ""
		if s.node.Ready != nil {
			ok, why = s.node.Ready()
		}
		return probe(ok, why)
	case "live":
		return probe(true, "")
	case "startup":
		return probe(s.node.Started == nil || s.node.Started(), "")
	case "version":
		return answer{code: http.StatusOK, text: fmt.Sprintf("dubbo version %q", s.node.Version)}
	}
	return answer{code: http.StatusNotFound, text: "no such command: " + name, unknown: true}
}

// probe answers like Java's probes: "true" with 200, "false" with 503.
func probe(ok bool, why string) answer {
	if ok {
		return answer{code: http.StatusOK, text: "true"}
	}
	text := "false"
	if why != "" {
		text += "\n" + why
	}
	return answer{code: http.StatusServiceUnavailable, text: text}
}

func (s *Server) change(ctx context.Context, name string, args []string) answer {
	pattern := ".*"
	if len(args) > 0 {
		pattern = args[0]
	}
	re, err := regexp.Compile("^(?:" + pattern + ")$")
	if err != nil {
		return answer{code: http.StatusBadRequest, text: fmt.Sprintf("bad service pattern %q: %v", pattern, err)}
	}
	f := s.node.Online
	if name == "offline" {
		f = s.node.Offline
	}
	if f == nil {
		return answer{code: http.StatusOK, text: "service not found"}
	}
	found, err := f(ctx, re)
	if err != nil {
		s.log.Error("qos "+name, "pattern", pattern, "err", err)
		return answer{code: http.StatusInternalServerError, text: name + " failed: " + err.Error()}
	}
	if !found {
		return answer{code: http.StatusOK, text: "service not found"}
	}
	s.log.Info("qos "+name, "pattern", pattern)
	return answer{code: http.StatusOK, text: "OK"}
}

// ls renders Java's two tables.
func (s *Server) ls() string {
	var b strings.Builder
	b.WriteString("As Provider side:\n")
	rows := [][2]string{{"Provider Service Name", "PUB"}}
	if s.node.Provided != nil {
		for _, p := range s.node.Provided() {
			pub := "N"
			if p.Registered {
				pub = "Y"
			}
			rows = append(rows, [2]string{p.Key, pub})
		}
	}
	b.WriteString(table(rows))
	b.WriteString("As Consumer side:\n")
	rows = [][2]string{{"Consumer Service Name", "NUM"}}
	if s.node.Consumed != nil {
		for _, c := range s.node.Consumed() {
			rows = append(rows, [2]string{c.Key, fmt.Sprint(c.Providers)})
		}
	}
	b.WriteString(table(rows))
	return b.String()
}

// table draws rows in a box, the first row as the header, like Java's TTable.
func table(rows [][2]string) string {
	w := [2]int{}
	for _, r := range rows {
		for i := range r {
			w[i] = max(w[i], len(r[i]))
		}
	}
	line := "+" + strings.Repeat("-", w[0]+2) + "+" + strings.Repeat("-", w[1]+2) + "+\n"
	var b strings.Builder
	b.WriteString(line)
	for i, r := range rows {
		fmt.Fprintf(&b, "| %-*s | %-*s |\n", w[0], r[0], w[1], r[1])
		if i == 0 {
			b.WriteString(line)
		}
	}
	b.WriteString(line)
	return b.String()
}

const helpText = `ls        list the services provided and consumed
online    register provided services again: online [service regex]
offline   unregister provided services, keep serving calls in flight: offline [service regex]
ready     true while every service is exported and registered (HTTP 200, else 503)
live      true while the process runs
startup   true once start-up finished
version   the version
quit      end this session
GET /metrics serves Prometheus metrics`

const welcome = `   ___   __  __ ___   ___   ____
  / _ \ / / / // _ ) / _ ) / __ \
 / // // /_/ // _  |/ _  |/ /_/ /
/____/ \____//____//____/ \____/
`

func isLoopback(a net.Addr) bool {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.IsLoopback()
	}
	return false
}

func isLoopbackString(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// peekedConn is a connection whose first bytes sit in r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

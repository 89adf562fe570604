package qos

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeNode is a node with one provided service that online/offline flip.
type fakeNode struct {
	mu         sync.Mutex
	registered bool
	patterns   []string
}

func (f *fakeNode) node() Node {
	return Node{
		Provided: func() []ProvidedService {
			f.mu.Lock()
			defer f.mu.Unlock()
			return []ProvidedService{{Key: "org.example.Greeter:1.0.0", Registered: f.registered}}
		},
		Consumed: func() []ConsumedService {
			return []ConsumedService{{Key: "org.example.Other", Providers: 2}}
		},
		Online:  func(_ context.Context, re *regexp.Regexp) (bool, error) { return f.set(re, true), nil },
		Offline: func(_ context.Context, re *regexp.Regexp) (bool, error) { return f.set(re, false), nil },
		Ready: func() (bool, string) {
			f.mu.Lock()
			defer f.mu.Unlock()
			if !f.registered {
				return false, "org.example.Greeter:1.0.0 is not registered"
			}
			return true, ""
		},
		Started: func() bool { return true },
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = io.WriteString(w, "dubbo_provider_requests_total 3\n")
		}),
		Version: "test",
	}
}

func (f *fakeNode) set(re *regexp.Regexp, registered bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.patterns = append(f.patterns, re.String())
	if !re.MatchString("org.example.Greeter:1.0.0") {
		return false
	}
	f.registered = registered
	return true
}

func start(t *testing.T, cfg Config, n Node) *Server {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	s, err := Start(cfg, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func get(t *testing.T, s *Server, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + s.Addr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHTTPCommands(t *testing.T) {
	f := &fakeNode{registered: true}
	s := start(t, Config{}, f.node())
	steps := []struct {
		path     string
		code     int
		contains string
	}{
		{"/ready", 200, "true"},
		{"/live", 200, "true"},
		{"/startup", 200, "true"},
		{"/version", 200, `dubbo version "test"`},
		{"/ls", 200, "| org.example.Greeter:1.0.0 | Y   |"},
		{"/offline?service=org.example.Nope", 200, "service not found"},
		{"/offline?service=org.example.*", 200, "OK"},
		{"/ready", 503, "org.example.Greeter:1.0.0 is not registered"},
		{"/ls", 200, "| org.example.Greeter:1.0.0 | N   |"},
		{"/online", 200, "OK"},
		{"/ready", 200, "true"},
		{"/metrics", 200, "dubbo_provider_requests_total 3"},
		{"/nosuch", 404, "no such command"},
		{"/offline?service=(", 400, "bad service pattern"},
	}
	for _, st := range steps {
		code, body := get(t, s, st.path)
		if code != st.code || !strings.Contains(body, st.contains) {
			t.Errorf("GET %s = %d %q, want %d containing %q", st.path, code, body, st.code, st.contains)
		}
	}
	if want := []string{"^(?:org.example.Nope)$", "^(?:org.example.*)$", "^(?:.*)$"}; strings.Join(f.patterns, " ") != strings.Join(want, " ") {
		t.Errorf("patterns %v, want %v", f.patterns, want)
	}
}

func TestForeignAddress(t *testing.T) {
	tests := []struct {
		accept bool
		path   string
		code   int
	}{
		{false, "/offline", http.StatusForbidden},
		{false, "/ls", http.StatusForbidden},
		{false, "/ready", http.StatusOK},
		{false, "/metrics", http.StatusOK},
		{true, "/offline", http.StatusOK},
	}
	for _, tt := range tests {
		f := &fakeNode{registered: true}
		s := &Server{cfg: Config{AcceptForeignIP: tt.accept}, node: f.node(), log: discard()}
		req := httptest.NewRequest(http.MethodGet, tt.path, nil)
		req.RemoteAddr = "192.0.2.7:40000" // a foreign host, never dialled
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code != tt.code {
			t.Errorf("accept=%v %s from a foreign host = %d %q, want %d", tt.accept, tt.path, rec.Code, rec.Body, tt.code)
		}
		if tt.path == "/offline" && !tt.accept && !f.registered {
			t.Error("a refused offline still unregistered the service")
		}
	}
}

func TestTelnet(t *testing.T) {
	f := &fakeNode{registered: true}
	s := start(t, Config{}, f.node())
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	// Silent for half a second: greeted, then prompted.
	if got := readUntilPrompt(t, br); !strings.Contains(got, "/ _ \\") {
		t.Fatalf("no welcome: %q", got)
	}
	for _, step := range []struct{ line, contains string }{
		{"ls", "As Provider side:"},
		{"offline org.example.Greeter:1.0.0", "OK"},
		{"ready", "false"},
		{"online", "OK"},
		{"ready", "true"},
		{"frobnicate now", "frobnicate now :no such command"},
		{"", ""},
	} {
		if _, err := io.WriteString(c, step.line+"\r\n"); err != nil {
			t.Fatal(err)
		}
		if got := readUntilPrompt(t, br); !strings.Contains(got, step.contains) {
			t.Errorf("%q answered %q, want it to contain %q", step.line, got, step.contains)
		}
	}
	if _, err := io.WriteString(c, "quit\r\n"); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(br)
	if string(rest) != "BYE!\n" {
		t.Errorf("quit answered %q", rest)
	}
}

func TestTelnetWithoutWaiting(t *testing.T) {
	f := &fakeNode{registered: true}
	s := start(t, Config{}, f.node())
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	// A script that types at once gets the answer without the welcome.
	if _, err := io.WriteString(c, "version\n"); err != nil {
		t.Fatal(err)
	}
	if got := readUntilPrompt(t, bufio.NewReader(c)); got != "dubbo version \"test\"\r\n"+prompt {
		t.Errorf("got %q", got)
	}
}

func readUntilPrompt(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var b strings.Builder
	for !strings.HasSuffix(b.String(), prompt) {
		c, err := br.ReadByte()
		if err != nil {
			t.Fatalf("reading %q: %v", b.String(), err)
		}
		b.WriteByte(c)
	}
	return b.String()
}

func TestPortInUse(t *testing.T) {
	first := start(t, Config{}, Node{})
	_, err := Start(Config{Listen: first.Addr()}, Node{}, nil)
	if !errors.Is(err, ErrPortInUse) || !strings.Contains(err.Error(), "qos.listen") {
		t.Fatalf("second server on %s: %v, want ErrPortInUse naming qos.listen", first.Addr(), err)
	}
	// The first one still answers.
	if code, _ := get(t, first, "/live"); code != 200 {
		t.Errorf("live = %d", code)
	}
}

func TestCloseEndsSessions(t *testing.T) {
	s, err := Start(Config{Listen: "127.0.0.1:0"}, Node{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, _ = io.WriteString(c, "live\n")
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited on an open telnet session")
	}
}

func discard() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

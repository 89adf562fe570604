// Package gateway is the consumer's HTTP/JSON gateway: it turns
//
//	POST /invoke/<interface>/<method>?version=&group=&types=&timeout=
//	Content-Type: application/json
//
//	["world", 42]
//
// into a call made through an rpc.Invoker (the consumer) by package
// jsoncall's steps, as dubbo call makes its calls, and the answer into
// JSON:
//
//	200 {"result": <value>}
//	4xx/5xx {"error": {"kind": "timeout", "message": "..."}}
//	500 {"error": {"kind": "exception", "class": "java.lang.RuntimeException", "message": "boom"}}
//
// The body is a JSON array with one element per argument (empty body: no
// arguments). A service of a Java interface is called with a generic
// invocation ($invoke, PROTOCOLS.md B.8): argument Java types come from
// ?types=java.lang.String,int, else from Options.Types (registry
// metadata), else they are inferred from the JSON (generic.InferTypes). A
// protobuf service (one its tri:// providers describe with gRPC server
// reflection, Options.Services) takes one argument, the request message as
// protobuf JSON, and the result is the response message
// (POST /invoke/greet.GreetService/Greet with [{"name":"x"}] answers
// {"result":{"greeting":"Hello, x"}}); its streaming methods are refused
// with 400. The types used are echoed in the Dubbo-Param-Types response
// header (a protobuf request's message name). ?timeout= (a Go duration
// such as 3s, or milliseconds) is the timeout of each attempt, as Dubbo's
// timeout attachment: it overrides the reference's and the method's, and
// failover retries a timed-out attempt on another provider. An X-Dubbo-Tag
// header is the request tag (Dubbo's dubbo.tag attachment): the call goes
// to the providers of that tag, else to untagged ones (tag routing).
//
// The interface must be a Java interface name and the method a Java
// identifier (consumer.CheckService). Calls to services outside the
// consumer's references make on-demand references, which the consumer
// bounds (see package consumer).
//
// A web page must not be able to use the gateway: it answers only requests
// whose Host is its own address (an IP literal of the listen address,
// localhost on loopback, or one of Options.Hosts), so DNS rebinding gets
// nowhere; it refuses any Origin but its own; and it takes only
// Content-Type application/json, which a cross-site page cannot send
// without a CORS preflight the gateway never grants. Off loopback a caller
// must present Options.Token as "Authorization: Bearer <token>", and the
// gateway refuses to listen beyond loopback without one.
//
// Status codes by error kind (rpc.ErrorKind): bad_request 400,
// service_not_found 404, exception 500 (the call worked, the business
// method threw: a client must not mistake it for a result), provider and
// connection 502, no_provider and pool_exhausted 503, timeout 504, other
// 500; the gateway's own refusals: unauthorized 401, forbidden 403,
// unsupported_media_type 415. GET /healthz answers 200 {"status":"ok"}.
package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/dubbo-lab/dubbo/node/cluster/router"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/generic"
	"github.com/dubbo-lab/dubbo/node/jsoncall"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// HeaderTag is the request header carrying the request tag.
const HeaderTag = "X-Dubbo-Tag"

// DefaultMaxBody is Dubbo's default payload limit (8 MiB); a body larger
// than this could not be sent to a provider anyway.
const DefaultMaxBody = 8 << 20

// Options configure a Server.
type Options struct {
	// Listen is the address Start listens on (host:port; port 0 picks
	// one), and the address requests must name in their Host. Required.
	Listen string
	// Token, when set, must come with every request from off loopback, as
	// "Authorization: Bearer <token>". Required to listen beyond loopback.
	// Default "".
	Token string
	// Hosts are more names clients may give in Host and Origin (a DNS
	// name in front of the gateway), with or without a port. Default none.
	Hosts []string
	// Invoker makes the calls (the consumer). Required.
	Invoker rpc.Invoker
	// Types resolves parameter types from the registry's metadata when the
	// request has none (the consumer). Optional: nil means infer them from
	// the JSON.
	Types jsoncall.TypeResolver
	// Services finds the descriptors of protobuf services (the consumer,
	// by its tri:// providers' reflection). Default: Invoker when it
	// implements jsoncall.ServiceResolver; nil means every service is a
	// Java interface.
	Services jsoncall.ServiceResolver
	// Logger receives one debug line per call and errors. Default slog.Default().
	Logger *slog.Logger
	// MaxBody limits the request body in bytes. Default DefaultMaxBody.
	MaxBody int64
	// Mounted says another server serves Handler and checks Host, Origin
	// and credentials itself (the console): the gateway's own checks of
	// them are skipped. Start refuses a mounted gateway. Default false.
	Mounted bool
}

// Server serves the gateway. Create it with New; Handler serves requests
// without a listener (tests, or mounting elsewhere), Start listens.
type Server struct {
	opts  Options
	echo  *echo.Echo
	log   *slog.Logger
	hosts *hostPolicy // what Host and Origin may name; set by New, updated by Start

	http *http.Server
	ln   net.Listener
	done chan struct{} // closed when the serve goroutine has returned
}

// New builds the gateway's routes.
func New(opts Options) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.Services == nil {
		opts.Services, _ = opts.Invoker.(jsoncall.ServiceResolver)
	}
	s := &Server{opts: opts, log: opts.Logger.With("component", "gateway"), hosts: newHostPolicy(opts.Listen, opts.Hosts)}
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleEchoError
	if !opts.Mounted {
		e.Use(s.guard)
	}
	e.POST("/invoke/:interface/:method", s.invoke)
	e.GET("/healthz", func(c echo.Context) error {
		return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
	})
	s.echo = e
	return s
}

// Handler returns the gateway as an http.Handler.
func (s *Server) Handler() http.Handler { return s.echo }

// Start listens on Options.Listen and serves in a goroutine that Shutdown
// stops. It refuses an address beyond loopback without Options.Token.
func (s *Server) Start() error {
	if s.ln != nil {
		return errors.New("gateway: already started")
	}
	if s.opts.Mounted {
		return errors.New("gateway: a mounted gateway is served by the server that mounts it")
	}
	if !loopbackListen(s.opts.Listen) && s.opts.Token == "" {
		return fmt.Errorf("gateway: listen on %s: other hosts can reach this address; set consumer.gateway.token (callers off loopback then send Authorization: Bearer <token>) or listen on 127.0.0.1", s.opts.Listen)
	}
	ln, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return fmt.Errorf("gateway: listen on %s: %w", s.opts.Listen, err)
	}
	s.ln = ln
	s.hosts = newHostPolicy(ln.Addr().String(), s.opts.Hosts) // the port picked for port 0
	s.http = &http.Server{Handler: s.echo, ReadHeaderTimeout: 10 * time.Second}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		if err := s.http.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("gateway stopped serving", "addr", ln.Addr().String(), "err", err)
		}
	}()
	s.log.Info("gateway listening", "addr", ln.Addr().String())
	return nil
}

// Addr is the address the gateway listens on ("" before Start).
func (s *Server) Addr() string {
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Shutdown stops accepting requests and waits, until ctx ends, for those
// in flight.
func (s *Server) Shutdown(ctx context.Context) error {
	if s.http == nil {
		return nil
	}
	err := s.http.Shutdown(ctx)
	select {
	case <-s.done:
	case <-ctx.Done():
		return errors.Join(err, ctx.Err())
	}
	return err
}

// errorBody is the JSON of every failed request.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Kind    string `json:"kind"`
	Class   string `json:"class,omitempty"`
	Message string `json:"message"`
}

// The kinds of the gateway's own refusals.
const (
	kindUnauthorized         = "unauthorized"
	kindForbidden            = "forbidden"
	kindUnsupportedMediaType = "unsupported_media_type"
)

var statusOf = map[string]int{
	rpc.KindBadRequest:      http.StatusBadRequest,
	rpc.KindServiceNotFound: http.StatusNotFound,
	rpc.KindException:       http.StatusInternalServerError,
	rpc.KindProvider:        http.StatusBadGateway,
	rpc.KindConnection:      http.StatusBadGateway,
	rpc.KindNoProvider:      http.StatusServiceUnavailable,
	rpc.KindPoolExhausted:   http.StatusServiceUnavailable,
	rpc.KindTimeout:         http.StatusGatewayTimeout,
	rpc.KindOther:           http.StatusInternalServerError,
}

func (s *Server) invoke(c echo.Context) error {
	req := c.Request()
	if err := checkJSON(req.Header.Get("Content-Type")); err != nil {
		return refuse(c, http.StatusUnsupportedMediaType, kindUnsupportedMediaType, err.Error())
	}
	q := c.QueryParams()
	call := jsoncall.Call{Interface: c.Param("interface"), Version: q.Get("version"), Group: q.Get("group"), Method: c.Param("method"),
		Generic: true}
	if err := consumer.CheckService(call.Interface, call.Version, call.Group, call.Method); err != nil {
		return writeError(c, err)
	}
	if t := q.Get("timeout"); t != "" {
		d, err := parseTimeout(t)
		if err != nil {
			return badRequest(c, err.Error())
		}
		call.Timeout = d
	}
	if tag := req.Header.Get(HeaderTag); tag != "" {
		call.Attachments = map[string]string{router.KeyTag: tag}
	}
	var err error
	if call.Args, err = s.readArgs(c); err != nil {
		return badRequest(c, err.Error())
	}
	if q.Has("types") {
		if call.Types, err = generic.ParseTypes(q.Get("types")); err != nil {
			return writeError(c, err)
		}
	}
	ctx := req.Context()
	prep, err := jsoncall.Prepare(ctx, jsoncall.Resolvers{Services: s.opts.Services, Types: s.opts.Types}, call, s.log)
	if err != nil {
		return writeError(c, err)
	}
	if prep.Streaming() {
		return badRequest(c, fmt.Sprintf("%s.%s is a %s protobuf method; the gateway calls unary methods (dubbo call streams)",
			call.Interface, call.Method, prep.Proto.Kind()))
	}
	c.Response().Header().Set("Dubbo-Param-Types", strings.Join(prep.Types, ","))

	start := time.Now()
	res, err := jsoncall.Invoke(ctx, s.opts.Invoker, prep.Invocation)
	s.log.Debug("gateway call", "interface", call.Interface, "method", call.Method, "version", call.Version, "group", call.Group,
		"elapsed", time.Since(start), "err", err)
	if err != nil {
		return writeError(c, err)
	}
	v, err := prep.Result(res)
	if err != nil {
		return writeError(c, &rpc.CallError{Kind: rpc.ErrProvider, Service: call.Interface, Method: call.Method, Address: res.Provider, Detail: err.Error()})
	}
	return c.JSON(http.StatusOK, map[string]any{"result": v})
}

// readArgs reads the body: a JSON array of arguments, or nothing.
func (s *Server) readArgs(c echo.Context) ([]json.RawMessage, error) {
	body := http.MaxBytesReader(c.Response(), c.Request().Body, s.opts.MaxBody)
	dec := json.NewDecoder(body)
	var raws []json.RawMessage
	if err := dec.Decode(&raws); err != nil {
		var tooBig *http.MaxBytesError
		var syntax *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return []json.RawMessage{}, nil // no body: no arguments
		case errors.As(err, &tooBig):
			return nil, fmt.Errorf("request body is larger than %d bytes", tooBig.Limit)
		case errors.As(err, &syntax):
			return nil, fmt.Errorf("request body is not valid JSON (at byte %d: %v); send the arguments as a JSON array, e.g. [\"world\"]", syntax.Offset, err)
		case errors.As(err, &typ):
			return nil, fmt.Errorf("request body is a JSON %s; send the arguments as a JSON array, e.g. [\"world\"] or [] for none", typ.Value)
		case errors.Is(err, io.ErrUnexpectedEOF):
			return nil, errors.New("request body is not valid JSON (it ends too early); send the arguments as a JSON array, e.g. [\"world\"]")
		}
		return nil, fmt.Errorf("reading request body: %v", err)
	}
	if dec.More() {
		return nil, errors.New("request body has data after the JSON array of arguments")
	}
	if raws == nil { // the body was null
		raws = []json.RawMessage{}
	}
	return raws, nil
}

// parseTimeout accepts a Go duration ("500ms", "2s") or milliseconds, as
// Dubbo's timeout parameter.
func parseTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		ms, merr := strconv.ParseInt(s, 10, 64)
		if merr != nil {
			return 0, fmt.Errorf("timeout %q: want a duration such as 500ms or 2s, or milliseconds", s)
		}
		d = time.Duration(ms) * time.Millisecond
	}
	if d < time.Millisecond {
		return 0, fmt.Errorf("timeout %q: must be at least 1ms", s)
	}
	return d, nil
}

func badRequest(c echo.Context, msg string) error {
	return refuse(c, http.StatusBadRequest, rpc.KindBadRequest, msg)
}

func refuse(c echo.Context, status int, kind, msg string) error {
	return c.JSON(status, errorBody{Error: errorDetail{Kind: kind, Message: msg}})
}

// writeError answers with the status and JSON of err's kind.
func writeError(c echo.Context, err error) error {
	kind := rpc.ErrorKind(err)
	detail := errorDetail{Kind: kind, Message: err.Error()}
	var ex *rpc.Exception
	if errors.As(err, &ex) {
		detail.Class, detail.Message = ex.Class, ex.Message
	}
	return c.JSON(statusOf[kind], errorBody{Error: detail})
}

// handleEchoError renders the router's own errors (unknown path, wrong
// method) in the gateway's error shape.
func (s *Server) handleEchoError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code, msg := http.StatusInternalServerError, err.Error()
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code, msg = he.Code, fmt.Sprint(he.Message)
	}
	kind := rpc.KindOther
	switch code {
	case http.StatusNotFound:
		kind, msg = rpc.KindBadRequest, "no such endpoint; use POST /invoke/<interface>/<method> with a JSON array of arguments"
	case http.StatusMethodNotAllowed:
		kind = rpc.KindBadRequest
	}
	if code >= 500 {
		s.log.Error("gateway request failed", "path", c.Request().URL.Path, "err", err)
	}
	if werr := c.JSON(code, errorBody{Error: errorDetail{Kind: kind, Message: msg}}); werr != nil {
		s.log.Debug("gateway could not write error", "err", werr)
	}
}

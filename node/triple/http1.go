package triple

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// http1Handler serves unary calls over HTTP/1.1 as Triple does (dubbo-go's
// triple_protocol, a fork of connect's unary protocol): POST
// /<service>/<method> with the request message as the body, in
// application/json or application/proto; 200 with the response in the
// same encoding, or an HTTP status mapped from the gRPC code with a JSON
// body {"code":"not_found","message":"..."}.
type http1Handler struct{ s *Server }

// http1Codecs are the content types a unary HTTP/1.1 call may use.
var http1Codecs = map[string]string{"application/json": "json", "application/proto": "proto"}

func (h *http1Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	codec, ok := http1Codecs[mt]
	if !ok {
		w.Header().Set("Accept-Post", "application/json, application/proto")
		w.WriteHeader(http.StatusUnsupportedMediaType)
		return
	}
	w.Header().Set("Accept-Encoding", "gzip")
	call, gz, st := h.call(r, codec)
	if st != nil {
		writeHTTP1Error(w, st, 0)
		return
	}
	m, st := h.s.handler.Route(&call)
	if st != nil {
		writeHTTP1Error(w, st, 0)
		return
	}
	if st, status := bindHTTP1(&call, m); st != nil {
		writeHTTP1Error(w, st, status)
		return
	}
	req, st := h.body(r, gz)
	if st != nil {
		writeHTTP1Error(w, st, 0)
		return
	}
	resp, trailer, st := h.invoke(r.Context(), &call, m.(UnaryMethod), req)
	// The answer must leave within FrameTimeout: a client that does not
	// read it loses its connection. (The request's ReadTimeout is over:
	// net/http clears it once the body is read.)
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(h.s.cfg.FrameTimeout))
	if !st.ok() {
		writeHTTP1Error(w, st, 0)
		return
	}
	hdr := w.Header()
	hdr.Set("Content-Type", mt)
	for _, f := range trailer {
		if k, v, ok := wireField(f); ok {
			hdr.Add("Trailer-"+k, v)
		}
	}
	if gz && acceptsGzip(r) {
		resp = h.s.gzip.compress(nil, resp)
		hdr.Set("Content-Encoding", "gzip")
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(resp) // the client went away: nothing to tell it
}

// call reads the call from the request's headers; gz says the body is
// gzipped.
func (h *http1Handler) call(r *http.Request, codec string) (call Call, gz bool, st *Status) {
	call = Call{Codec: codec, HTTP1: true}
	if ap, err := netip.ParseAddrPort(r.RemoteAddr); err == nil {
		call.Peer = ap
	}
	// Java Dubbo's documentation calls /<service>/<method>/.
	path := strings.TrimSuffix(r.URL.Path, "/")
	if i := strings.LastIndexByte(path, '/'); len(path) > 0 && path[0] == '/' && i > 1 && i < len(path)-1 {
		call.Service, call.Method = path[1:i], path[i+1:]
	} else {
		return call, false, Errorf(Unimplemented, "malformed method name: %q", path)
	}
	if v := r.Header.Get("Triple-Timeout-Ms"); v != "" {
		d, err := parseTimeoutMillis(v)
		if err != nil {
			return call, false, Errorf(InvalidArgument, "%v", err)
		}
		call.Deadline = time.Now().Add(d)
	}
	switch enc := r.Header.Get("Content-Encoding"); enc {
	case "", "identity":
	case "gzip":
		gz = true
	default:
		return call, false, Errorf(Unimplemented, "unknown compression %q: supported encodings are gzip", enc)
	}
	for k, vs := range r.Header {
		key := strings.ToLower(k)
		if reservedKey(key) || http1Reserved(key) {
			continue
		}
		for _, v := range vs {
			if isBinaryKey(key) {
				var err error
				if v, err = decodeBinary(v); err != nil {
					return call, false, Errorf(InvalidArgument, "malformed binary metadata in header %q: %v", key, err)
				}
			}
			call.Header = append(call.Header, rpc.MetadataField{Key: key, Value: v})
		}
	}
	return call, gz, nil
}

// http1Reserved says whether an HTTP/1.1 header belongs to HTTP or to
// Triple's unary protocol rather than to the call's metadata.
func http1Reserved(key string) bool {
	switch key {
	case "triple-timeout-ms", "triple-protocol-version", "accept", "trailer", "expect":
		return true
	}
	return false
}

func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for _, e := range strings.Split(v, ",") {
			if e, _, _ = strings.Cut(strings.TrimSpace(e), ";"); e == "gzip" {
				return true
			}
		}
	}
	return false
}

// bindHTTP1 checks that m can serve a call over HTTP/1.1: only unary
// methods can. A streaming method is refused with 505 HTTP Version Not
// Supported, as connect refuses a bidi stream over HTTP/1.1.
func bindHTTP1(call *Call, m Method) (st *Status, httpStatus int) {
	if m == nil {
		return Errorf(Unimplemented, "unknown method %s for service %s", call.Method, call.Service), 0
	}
	if k := m.Kind(); k != rpc.Unary {
		return Errorf(Unimplemented, "method %s/%s is %v: streaming calls need HTTP/2 (gRPC); HTTP/1.1 serves unary calls only",
			call.Service, call.Method, k), http.StatusHTTPVersionNotSupported
	}
	if _, ok := m.(UnaryMethod); !ok {
		return Errorf(Internal, "method %s/%s: a unary method must implement UnaryMethod", call.Service, call.Method), 0
	}
	return nil, 0
}

// body reads the request message: a Content-Length past MaxMessage is
// refused before the body is read, a body or an inflated body past it as
// soon as it is.
func (h *http1Handler) body(r *http.Request, gz bool) ([]byte, *Status) {
	limit := h.s.cfg.MaxMessage
	tooLarge := Errorf(ResourceExhausted, "request message larger than max %d", limit)
	if r.ContentLength > int64(limit) {
		return nil, tooLarge
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	if err != nil {
		return nil, Errorf(Canceled, "reading the request: %v", err)
	}
	if len(b) > limit {
		return nil, tooLarge
	}
	if gz {
		out, err := h.s.gzip.decompress(b, limit)
		if errors.Is(err, errTooLarge) {
			return nil, tooLarge
		}
		if err != nil {
			return nil, Errorf(InvalidArgument, "decompressing the request: %v", err)
		}
		b = out
	}
	return b, nil
}

// invoke runs a unary method and waits for its reply, its deadline, or
// the client going away.
func (h *http1Handler) invoke(parent context.Context, call *Call, m UnaryMethod, req []byte) ([]byte, rpc.Metadata, *Status) {
	ctx, cancel := parent, context.CancelFunc(func() {})
	if !call.Deadline.IsZero() {
		ctx, cancel = context.WithDeadline(parent, call.Deadline)
	}
	defer cancel()
	type result struct {
		resp    []byte
		trailer rpc.Metadata
		st      *Status
	}
	done := make(chan result, 1)
	reply := func(resp []byte, trailer rpc.Metadata, st *Status) {
		select {
		case done <- result{resp, trailer, st}:
		default: // replied twice: the first counts
		}
	}
	func() {
		defer func() {
			if r := recover(); r != nil {
				h.s.log.Error("triple handler panicked", "service", call.Service, "method", call.Method, "panic", r)
				reply(nil, nil, Errorf(Internal, "handler panicked in %s/%s: %v", call.Service, call.Method, r))
			}
		}()
		m.Unary(ctx, call, req, reply)
	}()
	select {
	case r := <-done:
		return r.resp, r.trailer, r.st
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, nil, Errorf(DeadlineExceeded, "deadline exceeded")
		}
		return nil, nil, Errorf(Canceled, "the client went away")
	}
}

// writeHTTP1Error answers with st as Triple's unary protocol does, with
// the HTTP status mapped from its code unless httpStatus is set.
func writeHTTP1Error(w http.ResponseWriter, st *Status, httpStatus int) {
	code := st.Code.http1()
	status := code.httpStatus()
	if httpStatus != 0 {
		status = httpStatus
	}
	body, _ := json.Marshal(struct {
		Code    string `json:"code"`
		Message string `json:"message,omitempty"`
	}{code.String(), st.Message})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

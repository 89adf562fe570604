package triple

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// headerList collects one header block as HPACK decodes it, with the
// checks RFC 9113 §8.2-8.3 asks of every block (x/net's Framer makes the
// same ones in ReadMetaHeaders, which allocates more per block than a
// request is worth here): valid lower-case names and valid values, pseudo
// fields first, and at most limit bytes (name, value and 32 per field).
// Past the limit it keeps decoding, so the connection's HPACK table stays
// in step, but keeps nothing more.
type headerList struct {
	dec        *hpack.Decoder
	fields     []hpack.HeaderField
	limit      int
	remain     int
	truncated  bool
	invalid    error
	sawRegular bool
}

func (h *headerList) reset() {
	clear(h.fields)
	h.fields = h.fields[:0]
	h.remain = h.limit
	h.truncated = false
	h.invalid = nil
	h.sawRegular = false
	h.dec.SetEmitEnabled(true)
}

// emit is the HPACK decoder's emit function. Once the block is invalid or
// over the limit, the decoder stops emitting (and making strings).
func (h *headerList) emit(hf hpack.HeaderField) {
	if !validValue(hf.Value) {
		h.invalid = fmt.Errorf("invalid value of header field %q", hf.Name)
		h.dec.SetEmitEnabled(false)
		return
	}
	if strings.HasPrefix(hf.Name, ":") {
		if h.sawRegular {
			h.invalid = fmt.Errorf("pseudo header field %q after a regular one", hf.Name)
			h.dec.SetEmitEnabled(false)
			return
		}
	} else {
		h.sawRegular = true
		if !validKey(hf.Name) {
			h.invalid = fmt.Errorf("invalid header field name %q", hf.Name)
			h.dec.SetEmitEnabled(false)
			return
		}
	}
	size := int(hf.Size())
	if size > h.remain {
		h.truncated = true
		h.remain = 0
		h.dec.SetEmitEnabled(false)
		return
	}
	h.remain -= size
	h.fields = append(h.fields, hf)
}

// validKey says whether k may be an HTTP/2 field name: a token, in lower
// case.
func validKey(k string) bool {
	if !httpguts.ValidHeaderFieldName(k) {
		return false
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; 'A' <= c && c <= 'Z' {
			return false
		}
	}
	return true
}

func validValue(v string) bool { return httpguts.ValidHeaderFieldValue(v) }

// earlyAnswer is how a request that never becomes a call is answered: a
// trailers-only response with an HTTP status and a gRPC status, or, for a
// malformed HTTP/2 request, RST_STREAM.
type earlyAnswer struct {
	http   int
	status *Status
	rst    http2.ErrCode // nonzero: reset the stream instead
	accept bool          // add grpc-accept-encoding (an unknown grpc-encoding)
}

func malformed(format string, args ...any) *earlyAnswer {
	return &earlyAnswer{rst: http2.ErrCodeProtocol, status: Errorf(Internal, format, args...)}
}

// request is what a request's headers say about the call.
type request struct {
	call        Call
	contentType string // echoed in the response
	gzip        bool   // messages may arrive compressed (grpc-encoding: gzip)
}

// parseRequest reads a request's header fields (RFC 9113 §8.3.1, gRPC's
// PROTOCOL-HTTP2): pseudo fields, content-type, grpc-timeout,
// grpc-encoding, and the rest as custom metadata. Status and order of the
// checks follow grpc-go's server: a malformed HTTP/2 request is reset, a
// wrong content-type gets 415, a bad timeout or -bin value 400 with
// Internal, a method other than POST 405.
//
// The metadata is appended to header (a buffer of the caller's).
func parseRequest(fields []hpack.HeaderField, now time.Time, header rpc.Metadata) (req request, fail *earlyAnswer) {
	var method, path, scheme, timeout, encoding string
	var seen uint8 // pseudo fields seen, to refuse repeats
	nmd := 0
	for _, hf := range fields {
		var bit uint8
		switch hf.Name {
		case ":method":
			method, bit = hf.Value, 1
		case ":path":
			path, bit = hf.Value, 2
		case ":scheme":
			scheme, bit = hf.Value, 4
		case ":authority":
			bit = 8
		case "content-type":
			req.contentType = hf.Value
		case "te":
			if hf.Value != "trailers" {
				return req, malformed("te: %q (only \"trailers\" is allowed)", hf.Value)
			}
		case "grpc-timeout":
			timeout = hf.Value
		case "grpc-encoding":
			encoding = hf.Value
		case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
			return req, malformed("connection-specific header field %q", hf.Name)
		default:
			if hf.Name[0] == ':' {
				return req, malformed("unknown pseudo header field %q", hf.Name)
			}
			if !reservedKey(hf.Name) {
				nmd++
			}
		}
		if bit != 0 {
			if seen&bit != 0 {
				return req, malformed("repeated pseudo header field %q", hf.Name)
			}
			seen |= bit
		}
	}
	if method == "" || path == "" || scheme == "" {
		return req, malformed("missing :method, :scheme or :path")
	}
	subtype, ok := grpcSubtype(req.contentType)
	if !ok {
		return req, &earlyAnswer{http: http.StatusUnsupportedMediaType,
			status: Errorf(InvalidArgument, "invalid gRPC request content-type %q", req.contentType)}
	}
	req.call.Codec = subtype
	if method != http.MethodPost {
		return req, &earlyAnswer{http: http.StatusMethodNotAllowed,
			status: Errorf(Internal, "HTTP/2 request with :method %q, want POST", method)}
	}
	if timeout != "" {
		d, err := parseTimeout(timeout)
		if err != nil {
			return req, &earlyAnswer{http: http.StatusBadRequest, status: Errorf(Internal, "malformed grpc-timeout: %v", err)}
		}
		req.call.Deadline = now.Add(d)
	}
	switch encoding {
	case "", "identity":
	case "gzip":
		req.gzip = true
	default:
		return req, &earlyAnswer{http: http.StatusOK, accept: true,
			status: Errorf(Unimplemented, "grpc: Decompressor is not installed for grpc-encoding %q", encoding)}
	}
	if nmd > 0 {
		req.call.Header = header[:0]
		if cap(header) < nmd {
			req.call.Header = make(rpc.Metadata, 0, nmd)
		}
		for _, hf := range fields {
			if reservedKey(hf.Name) {
				continue
			}
			v := hf.Value
			if isBinaryKey(hf.Name) {
				var err error
				if v, err = decodeBinary(v); err != nil {
					return req, &earlyAnswer{http: http.StatusBadRequest,
						status: Errorf(Internal, "malformed binary metadata in header %q: %v", hf.Name, err)}
				}
			}
			req.call.Header = append(req.call.Header, rpc.MetadataField{Key: hf.Name, Value: v})
		}
	}
	// "/<service>/<method>"; the service name may not be empty.
	if i := strings.LastIndexByte(path, '/'); path[0] == '/' && i > 1 && i < len(path)-1 {
		req.call.Service, req.call.Method = path[1:i], path[i+1:]
	} else {
		return req, &earlyAnswer{http: http.StatusOK, status: Errorf(Unimplemented, "malformed method name: %q", path)}
	}
	return req, nil
}

// grpcSubtype reads a gRPC content-type: "application/grpc" is "proto",
// "application/grpc+json" is "json"; parameters after ';' are ignored.
func grpcSubtype(ct string) (string, bool) {
	const base = "application/grpc"
	if !strings.HasPrefix(ct, base) {
		return "", false
	}
	rest := ct[len(base):]
	if i := strings.IndexByte(rest, ';'); i >= 0 {
		rest = rest[:i]
	}
	switch {
	case rest == "":
		return "proto", true
	case rest[0] == '+' && len(rest) > 1:
		return rest[1:], true
	}
	return "", false
}

// responseContentType is the content-type of a response to a request of
// content-type ct (which grpcSubtype accepted): the same type without
// parameters.
func responseContentType(ct string) string {
	if i := strings.IndexByte(ct, ';'); i >= 0 {
		ct = ct[:i]
	}
	return ct
}

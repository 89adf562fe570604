package protocol

// Request is one dubbo request frame: an invocation, or an event when Event
// is set (B.4, B.6).
type Request struct {
	ID            int64
	TwoWay        bool // false = oneway: the provider sends no response
	Event         bool
	Serialization byte // 0 means hessian2 when encoding

	// Invocation fields, for non-event requests.
	DubboVersion string // "" means DubboVersion when encoding
	Path         string // service path, normally the interface name
	Version      string // service version; Java sends "0.0.0" for none
	Method       string
	ParamDesc    string // JVM descriptor of the parameter types, see ParseDescriptor
	Args         []any
	Attachments  map[string]any

	// EventData is the event body: nil for a heartbeat, "R"/"W" for the
	// read-only/writable events.
	EventData any

	// Size is the frame's length in bytes, header included: set by
	// decoding, and by a transport client once it has encoded the request
	// (Dubbo's input statistic). Encoding does not read it.
	Size int
}

// Event payloads a provider sends when it starts or stops accepting calls.
const (
	EventReadOnly = "R"
	EventWritable = "W"
)

// Heartbeat returns a heartbeat request (flags e2, body N).
func Heartbeat(id int64) *Request {
	return &Request{ID: id, TwoWay: true, Event: true}
}

// ReadOnlyEvent returns the oneway event (flags a2, body "R") a provider
// sends on graceful shutdown.
func ReadOnlyEvent(id int64) *Request {
	return &Request{ID: id, Event: true, EventData: EventReadOnly}
}

// IsHeartbeat reports whether r is a heartbeat request.
func (r *Request) IsHeartbeat() bool { return r.Event && r.EventData == nil }

// Attachment returns a string attachment, "" if absent or not a string.
func (r *Request) Attachment(key string) string {
	s, _ := r.Attachments[key].(string)
	return s
}

// Response is one dubbo response frame (B.3, B.5).
type Response struct {
	ID            int64
	Status        Status // 0 means StatusOK when encoding
	Event         bool   // heartbeat response
	Serialization byte   // 0 means hessian2 when encoding

	// For StatusOK: a value or an exception, and attachments.
	Value       any
	Exception   *Exception
	Attachments map[string]any
	// Legacy selects response types 0/1/2 without attachments, for consumers
	// whose request version does not support them (see
	// SupportsResponseAttachments). Decoding sets it when such a type arrived.
	Legacy bool

	// ErrorMessage is the body of a non-OK status.
	ErrorMessage string

	// Size is the frame's length in bytes, header included, as decoded
	// (Dubbo's output statistic); encoding ignores it.
	Size int
	// Output, when set, is told the frame's length once a server has
	// encoded the response (a provider's output statistic).
	Output SizeCounter
}

// SizeCounter counts the bytes of encoded responses; *stats.Counter is one.
type SizeCounter interface {
	AddOutput(bytes int)
}

// ResponseTo returns an OK response that answers req in its serialization,
// with the response types req's consumer understands.
func ResponseTo(req *Request) *Response {
	return &Response{
		ID:            req.ID,
		Status:        StatusOK,
		Event:         req.Event,
		Serialization: req.Serialization,
		Legacy:        !req.Event && !SupportsResponseAttachments(req.DubboVersion),
	}
}

// Response body types (B.5); the first value of an OK body.
const (
	respWithException                = 0
	respValue                        = 1
	respNullValue                    = 2
	respWithExceptionWithAttachments = 3
	respValueWithAttachments         = 4
	respNullValueWithAttachments     = 5
)

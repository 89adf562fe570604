// Package rpc holds the few types every step of a Dubbo call shares: the
// Invocation a caller makes, the Result it gets back, the Invoker that turns
// one into the other, and the error categories users test with errors.Is
// with the kinds they are reported under (errors.go).
//
// A protobuf (IDL) service is called with an encoded Message as the one
// argument, and streams with a Streamer (message.go); its methods' shapes
// are MethodKinds (kind.go), and their calls carry gRPC Metadata
// (metadata.go).
//
// The call path is a chain of Invokers: the consumer's cluster invoker wraps
// the directory, routers and load balancer and finally calls a protocol
// invoker that talks to one provider; on the provider side the exporter looks
// up the service and calls its handler, which is an Invoker too.
package rpc

import "context"

// Invocation is one call of one method.
type Invocation struct {
	// Service is the interface name, e.g. org.example.Greeter.
	Service string
	// Version and Group select among providers of the same interface.
	Version, Group string
	// Method is the method name ($invoke for generic calls, $echo for echo).
	Method string
	// ParamTypes are the Java type names of Args ("java.lang.String", "int").
	ParamTypes []string
	Args       []any
	// Attachments travel with the call (timeout, token, user values).
	Attachments map[string]any
}

// Attachment returns the attachment key as a string ("" if absent or not a string).
func (inv *Invocation) Attachment(key string) string {
	s, _ := inv.Attachments[key].(string)
	return s
}

// SetAttachment sets one attachment, creating the map when needed.
func (inv *Invocation) SetAttachment(key string, v any) {
	if inv.Attachments == nil {
		inv.Attachments = make(map[string]any, 4)
	}
	inv.Attachments[key] = v
}

// Result is what a provider answered: a value or a business exception.
// Failures of the call itself (timeout, no provider, connection lost) are
// returned as errors instead, so the cluster can retry them.
type Result struct {
	Value any
	// Exception is the business exception the handler threw, if any.
	Exception *Exception
	// Attachments the provider sent back.
	Attachments map[string]any
	// Provider is the host:port that answered, set by the consumer (not
	// sent on the wire), so callers can tell which provider served them.
	Provider string
	// RequestBytes and ResponseBytes are the sizes of the request and
	// response frames, set by the transport (Dubbo's input and output
	// statistics); 0 when not known.
	RequestBytes, ResponseBytes int
}

// Exception is a business exception travelling as a Java Throwable.
type Exception struct {
	// Class is the Java class name, e.g. java.lang.RuntimeException.
	Class string
	// Message is the Throwable's detailMessage.
	Message string
}

func (e *Exception) Error() string {
	if e.Message == "" {
		return e.Class
	}
	return e.Message
}

// Invoker makes calls. Implementations are safe for concurrent use.
type Invoker interface {
	Invoke(ctx context.Context, inv *Invocation) (*Result, error)
}

// InvokerFunc adapts a function to Invoker.
type InvokerFunc func(ctx context.Context, inv *Invocation) (*Result, error)

// Invoke calls f.
func (f InvokerFunc) Invoke(ctx context.Context, inv *Invocation) (*Result, error) {
	return f(ctx, inv)
}

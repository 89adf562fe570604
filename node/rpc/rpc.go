// Package rpc holds the few types every step of a Dubbo call shares: the
// Invocation a caller makes, the Result it gets back, the Invoker that turns
// one into the other, and the error categories users test with errors.Is.
//
// The call path is a chain of Invokers: the consumer's cluster invoker wraps
// the directory, routers and load balancer and finally calls a protocol
// invoker that talks to one provider; on the provider side the exporter looks
// up the service and calls its handler, which is an Invoker too.
package rpc

import (
	"context"
	"errors"
	"fmt"
)

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

// Error categories. Every error returned along the call path wraps one of
// them (with the service, method and address involved) so callers can use
// errors.Is.
var (
	// ErrNoProvider: no provider is available for the service after routing.
	ErrNoProvider = errors.New("no provider available")
	// ErrTimeout: the call did not complete within its timeout.
	ErrTimeout = errors.New("call timed out")
	// ErrServiceNotFound: the provider does not export the service or method.
	ErrServiceNotFound = errors.New("service not found")
	// ErrPoolExhausted: the provider's business thread pool refused the call.
	ErrPoolExhausted = errors.New("provider thread pool exhausted")
	// ErrBadRequest: the request could not be encoded, decoded or was refused
	// (payload too large, bad token, unsupported serialization).
	ErrBadRequest = errors.New("bad request")
	// ErrConnection: the connection to the provider failed or closed.
	ErrConnection = errors.New("connection to provider failed")
	// ErrProvider: the provider failed to process the call (status 70/80/50).
	ErrProvider = errors.New("provider error")
)

// CallError wraps one failure with the call it belongs to.
type CallError struct {
	Kind    error  // one of the Err* categories above
	Service string // interface
	Method  string
	Address string // provider host:port, if one was chosen
	Detail  string // what happened, in words
}

func (e *CallError) Error() string {
	where := e.Service + "." + e.Method
	if e.Address != "" {
		where += " at " + e.Address
	}
	if e.Detail == "" {
		return fmt.Sprintf("%s: %s", where, e.Kind)
	}
	return fmt.Sprintf("%s: %s: %s", where, e.Kind, e.Detail)
}

// Unwrap lets errors.Is match the category.
func (e *CallError) Unwrap() error { return e.Kind }

// Retryable reports whether a failover cluster may retry err on another
// provider: everything except business exceptions and bad requests, as in
// Dubbo, where only RpcExceptions that are not biz exceptions are retried.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	var ex *Exception
	if errors.As(err, &ex) {
		return false
	}
	return !errors.Is(err, ErrBadRequest)
}

package rpc

import (
	"context"
	"errors"
	"fmt"
)

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

// Error kinds: the name of each category, and of the two outcomes that are
// none, as `dubbo call`, `dubbo bench` (errors_by_kind), the gateway
// ({"error":{"kind":…}}) and the plugin wire name them.
const (
	KindNoProvider      = "no_provider"
	KindTimeout         = "timeout"
	KindServiceNotFound = "service_not_found"
	KindPoolExhausted   = "pool_exhausted"
	KindBadRequest      = "bad_request"
	KindConnection      = "connection"
	KindProvider        = "provider"
	// KindException is a business exception thrown by the provider's handler.
	KindException = "exception"
	// KindOther is an error of no category, e.g. a closed consumer.
	KindOther = "other"
)

// categories is the one table of the categories and their kinds.
var categories = [...]struct {
	err  error
	kind string
}{
	{ErrNoProvider, KindNoProvider},
	{ErrTimeout, KindTimeout},
	{ErrServiceNotFound, KindServiceNotFound},
	{ErrPoolExhausted, KindPoolExhausted},
	{ErrBadRequest, KindBadRequest},
	{ErrConnection, KindConnection},
	{ErrProvider, KindProvider},
}

// Category is the category err wraps, one of the Err* above; nil when it
// wraps none.
func Category(err error) error {
	if err == nil {
		return nil
	}
	for _, c := range categories {
		if errors.Is(err, c.err) {
			return c.err
		}
	}
	return nil
}

// CategoryKind is the kind of a category ("no_provider" for
// ErrNoProvider); "" when c is not one of the categories.
func CategoryKind(c error) string {
	for _, k := range categories {
		if k.err == c {
			return k.kind
		}
	}
	return ""
}

// KindCategory is the category a kind names; nil when it names none
// (exception, other, or a name that is not a kind).
func KindCategory(kind string) error {
	for _, k := range categories {
		if k.kind == kind {
			return k.err
		}
	}
	return nil
}

// ErrorKind names the kind of err ("" for nil). A business exception
// wins over a category it may also carry; an uncategorised deadline is a
// timeout.
func ErrorKind(err error) string {
	if err == nil {
		return ""
	}
	var ex *Exception
	if errors.As(err, &ex) {
		return KindException
	}
	if c := Category(err); c != nil {
		return CategoryKind(c)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return KindTimeout
	}
	return KindOther
}

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

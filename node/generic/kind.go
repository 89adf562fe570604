package generic

import (
	"context"
	"errors"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Error kinds: the names under which `dubbo call`, `dubbo bench`
// (errors_by_kind) and the gateway ({"error":{"kind":…}}) report failures.
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
	KindOther     = "other"
)

var kindOf = []struct {
	err  error
	name string
}{
	{rpc.ErrNoProvider, KindNoProvider},
	{rpc.ErrTimeout, KindTimeout},
	{rpc.ErrServiceNotFound, KindServiceNotFound},
	{rpc.ErrPoolExhausted, KindPoolExhausted},
	{rpc.ErrBadRequest, KindBadRequest},
	{rpc.ErrConnection, KindConnection},
	{rpc.ErrProvider, KindProvider},
}

// ErrorKind names the category of err ("" for nil). A business exception
// wins over a category it may also carry; an uncategorised deadline is a
// timeout.
func ErrorKind(err error) string {
	if err == nil {
		return ""
	}
	var ex *rpc.Exception
	if errors.As(err, &ex) {
		return KindException
	}
	for _, k := range kindOf {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return KindTimeout
	}
	return KindOther
}

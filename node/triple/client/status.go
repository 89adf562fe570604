package client

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// codeBizError is dubbo-go's status for a business error (a handler's
// error), outside gRPC's 0-16: triple_protocol.CodeBizError in v3.3.0.
const codeBizError codes.Code = 17

// headerExceptionCode is Java's response header (3.2 and later) saying
// that the call's answer is an exception; "0" means none.
const headerExceptionCode = "tri-exception-code"

// categories is the rpc category of each gRPC status code that has one;
// every other code is a provider error.
var categories = map[codes.Code]error{
	// As transport.Client: the provider cannot be reached or is going
	// away. With no connection up the client is not Available either, so
	// the cluster answers no_provider when no other provider is.
	codes.Unavailable:       rpc.ErrConnection,
	codes.DeadlineExceeded:  rpc.ErrTimeout,
	codes.ResourceExhausted: rpc.ErrPoolExhausted,
	codes.Unimplemented:     rpc.ErrServiceNotFound,
	codes.NotFound:          rpc.ErrServiceNotFound,
	codes.InvalidArgument:   rpc.ErrBadRequest,
	// A refused token is a bad request over dubbo:// too: another
	// provider refuses it the same way.
	codes.PermissionDenied: rpc.ErrBadRequest,
	codes.Unauthenticated:  rpc.ErrBadRequest,
}

// tooLarge is in grpc-go's message for a message over the size limits,
// which it reports as ResourceExhausted from the client itself (and the
// server too): the message was too large, not the provider busy.
const tooLarge = "message larger than max"

// failure turns a grpc-go error into the call's error: a business
// exception (returned as an *rpc.Exception for the Result), an error of
// the caller's context, or an *rpc.CallError of the category of its code.
func (c *Client) failure(ctx context.Context, inv *rpc.Invocation, err error, header, trailer metadata.MD) (*rpc.Exception, error) {
	st, _ := status.FromError(err)
	if ex := exceptionOf(st, header, trailer); ex != nil {
		return ex, nil
	}
	fail := &rpc.CallError{Kind: rpc.ErrProvider, Service: inv.Service, Method: inv.Method, Address: c.addr,
		Detail: st.Code().String() + ": " + st.Message()}
	if cerr := ctx.Err(); cerr != nil && (st.Code() == codes.Canceled || st.Code() == codes.DeadlineExceeded) {
		if errors.Is(cerr, context.DeadlineExceeded) {
			fail.Kind = rpc.ErrTimeout
			return nil, fail
		}
		return nil, fmt.Errorf("%s.%s at %s: %w", inv.Service, inv.Method, c.addr, cerr)
	}
	if kind, ok := categories[st.Code()]; ok {
		fail.Kind = kind
	}
	if st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), tooLarge) {
		fail.Kind = rpc.ErrBadRequest
	}
	return nil, fail
}

// exceptionOf is the business exception a failed call carries, if it is
// one: dubbo-go's status 17, or a status with Java's tri-exception-code.
// The wire says no class, so the exception has none.
func exceptionOf(st *status.Status, header, trailer metadata.MD) *rpc.Exception {
	if st.Code() == codeBizError || exceptionCode(header, trailer) {
		return &rpc.Exception{Message: st.Message()}
	}
	return nil
}

// exceptionCode reports whether the response says, with Java's
// tri-exception-code, that it carries an exception.
func exceptionCode(header, trailer metadata.MD) bool {
	for _, md := range []metadata.MD{header, trailer} {
		if v := md.Get(headerExceptionCode); len(v) > 0 && v[0] != "" && v[0] != "0" {
			return true
		}
	}
	return false
}

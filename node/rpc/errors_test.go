package rpc_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

func TestErrorKind(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{nil, ""},
		{&rpc.CallError{Kind: rpc.ErrNoProvider}, "no_provider"},
		{fmt.Errorf("x: %w", rpc.ErrTimeout), "timeout"},
		{&rpc.CallError{Kind: rpc.ErrServiceNotFound}, "service_not_found"},
		{rpc.ErrPoolExhausted, "pool_exhausted"},
		{fmt.Errorf("arg 1: %w", rpc.ErrBadRequest), "bad_request"},
		{rpc.ErrConnection, "connection"},
		{rpc.ErrProvider, "provider"},
		{&rpc.Exception{Class: "java.lang.RuntimeException"}, "exception"},
		{fmt.Errorf("%w: %w", rpc.ErrProvider, &rpc.Exception{}), "exception"},
		{context.DeadlineExceeded, "timeout"},
		{errors.New("boom"), "other"},
	}
	for _, tt := range tests {
		if got := rpc.ErrorKind(tt.err); got != tt.want {
			t.Errorf("ErrorKind(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

// Each category has one kind that names it back; the outcomes that are no
// category name none.
func TestKindCategoryRoundTrip(t *testing.T) {
	for _, c := range []error{rpc.ErrNoProvider, rpc.ErrTimeout, rpc.ErrServiceNotFound, rpc.ErrPoolExhausted,
		rpc.ErrBadRequest, rpc.ErrConnection, rpc.ErrProvider} {
		k := rpc.CategoryKind(c)
		if k == "" || rpc.KindCategory(k) != c {
			t.Errorf("%v: kind %q names %v", c, k, rpc.KindCategory(k))
		}
		if got := rpc.Category(&rpc.CallError{Kind: c, Service: "s", Method: "m"}); got != c {
			t.Errorf("Category(CallError{%v}) = %v", c, got)
		}
	}
	for _, k := range []string{rpc.KindException, rpc.KindOther, "no-provider", ""} {
		if c := rpc.KindCategory(k); c != nil {
			t.Errorf("KindCategory(%q) = %v, want none", k, c)
		}
	}
	if c := rpc.Category(errors.New("boom")); c != nil {
		t.Errorf("Category(uncategorised) = %v", c)
	}
}

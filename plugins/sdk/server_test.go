package sdk

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/apache/dubbo-go-hessian2/java_exception"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

// serverGreeter answers from what its context holds, so that a test sees
// what the plugin's calls give their handlers.
type serverGreeter struct{}

type linkKey struct{}

func (serverGreeter) Echo(ctx context.Context, s string) (string, error) {
	switch s {
	case "fail":
		return "", java_exception.NewIllegalArgumentException("bad")
	case "panic":
		panic("oops")
	case "who":
		who, _ := Attachments(ctx)["who"].(string)
		return who, nil
	case "names":
		a := Attachments(ctx)
		return fmt.Sprint(a["interface"], " ", a["version"], " ", a["timeout"]), nil
	case "ctx":
		link, _ := ctx.Value(linkKey{}).(string)
		_, hasDeadline := ctx.Deadline()
		return link + " " + map[bool]string{true: "deadline", false: "none"}[hasDeadline], nil
	}
	return "echo " + s, nil
}

func (serverGreeter) Sum(_ context.Context, a, b int32) (int32, error) { return a + b, nil }

// TestServerCalls: a call decoded by Prepare and answered by Run, as the
// link serves it, gets the outcome the Dispatcher gives, and its handler
// sees the attachments and the link's context.
func TestServerCalls(t *testing.T) {
	d, err := NewDispatcher(Service{Interface: "a.S", Version: "1.0", Handler: serverGreeter{}})
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(context.Background(), &served{d: d}, nil)
	str := []string{"java.lang.String"}
	tests := []struct {
		name  string
		inv   rpc.Invocation
		value any
		class string // of the exception, when one is expected
		err   error
	}{
		{"string", rpc.Invocation{Method: "echo", ParamTypes: str, Args: []any{"x"}}, "echo x", "", nil},
		{"long string", rpc.Invocation{Method: "echo", ParamTypes: str, Args: []any{strings.Repeat("é", 600)}}, "echo " + strings.Repeat("é", 600), "", nil},
		{"error", rpc.Invocation{Method: "echo", ParamTypes: str, Args: []any{"fail"}}, nil, "java.lang.IllegalArgumentException", nil},
		{"panic", rpc.Invocation{Method: "echo", ParamTypes: str, Args: []any{"panic"}}, nil, "java.lang.RuntimeException", nil},
		{"attachments", rpc.Invocation{Method: "echo", ParamTypes: str, Args: []any{"who"}, Attachments: map[string]any{"who": "alice"}}, "alice", "", nil},
		{"names in attachments", rpc.Invocation{Method: "echo", ParamTypes: str, Args: []any{"names"},
			Attachments: map[string]any{"path": "a.S", "interface": "a.S", "version": "1.0", "timeout": "1000"}}, "a.S 1.0 1000", "", nil},
		{"link context", rpc.Invocation{Method: "echo", ParamTypes: str, Args: []any{"ctx"}}, "link deadline", "", nil},
		{"wrong argument", rpc.Invocation{Method: "echo", ParamTypes: []string{"int"}, Args: []any{int32(1)}}, nil, "java.lang.IllegalArgumentException", nil},
		{"two arguments", rpc.Invocation{Method: "sum", ParamTypes: []string{"int", "int"}, Args: []any{int32(2), int32(3)}}, int32(5), "", nil},
		{"unknown method", rpc.Invocation{Method: "nope"}, nil, "", rpc.ErrServiceNotFound},
	}
	// One call's leftovers must not reach the next: run them twice over.
	for range 2 {
		for _, tt := range tests {
			inv := tt.inv
			inv.Service, inv.Version = "a.S", "1.0"
			b, err := wire.EncodeCall(&inv)
			if err != nil {
				t.Fatal(err)
			}
			run, _ := s.Prepare(b)
			ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), linkKey{}, "link"), time.Minute)
			res, err := wire.DecodeReply(run.Run(ctx))
			cancel()
			switch {
			case tt.err != nil:
				if !errors.Is(err, tt.err) {
					t.Errorf("%s: %+v, %v; want %v", tt.name, res, err, tt.err)
				}
			case err != nil:
				t.Errorf("%s: %v", tt.name, err)
			case tt.class != "":
				if res.Exception == nil || res.Exception.Class != tt.class {
					t.Errorf("%s: %+v, want %s", tt.name, res, tt.class)
				}
			case res.Exception != nil || !reflect.DeepEqual(res.Value, tt.value):
				t.Errorf("%s: %+v, want %v", tt.name, res, tt.value)
			}
		}
	}
}

// TestGCPercent: Serve raises the collector's target unless GOGC is set
// or the plugin set its own.
func TestGCPercent(t *testing.T) {
	for _, tt := range []struct {
		env     map[string]string
		current int
		want    int
	}{
		{nil, 100, pluginGCPercent},
		{map[string]string{"GOGC": "100"}, 100, 0},
		{map[string]string{"GOGC": "off"}, 100, 0},
		{map[string]string{"GOMEMLIMIT": "64MiB"}, 100, pluginGCPercent},
		{nil, 50, 0}, // debug.SetGCPercent(50) before Serve
	} {
		lookup := func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
		if got := gcPercent(lookup, tt.current); got != tt.want {
			t.Errorf("env %v, target %d: gcPercent = %d, want %d", tt.env, tt.current, got, tt.want)
		}
	}
	// The target is read without changing it.
	old := debug.SetGCPercent(73)
	defer debug.SetGCPercent(old)
	if got := currentGCPercent(); got != 73 {
		t.Errorf("currentGCPercent = %d after SetGCPercent(73)", got)
	}
}

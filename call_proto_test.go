package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/internal/testkit/greetgrpc"
)

// run runs the dubbo command line in the test process with an empty config
// file, stdin in, and returns what it printed and its exit code.
func run(t *testing.T, in string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "dubbo.toml")
	if err := os.WriteFile(cfg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	args = append([]string{args[0], "--config", cfg}, args[1:]...)
	var out, errOut bytes.Buffer
	root := newRootCommand(&out, &errOut)
	root.SetIn(strings.NewReader(in))
	root.SetArgs(args)
	_, err := root.ExecuteContextC(context.Background())
	if err != nil {
		code = exitCode(err)
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

// dubbo call and dubbo bench on a protobuf service: JSON in and out, the
// descriptor from the provider's reflection, streams from stdin.
func TestCallProtobufService(t *testing.T) {
	srv := greetgrpc.Start(t, greetgrpc.Options{})
	url := "tri://" + srv.Addr()
	tests := []struct {
		name, in string
		args     []string
		code     int
		out      string // exact stdout, or a part of stderr when code != 0
	}{
		{"unary", "", []string{"greet.GreetService", "Greet", `{"name":"x"}`}, 0, `{"greeting":"Hello, x"}` + "\n"},
		{"server stream", "", []string{"greet.GreetService", "GreetServerStream", `{"name":"x","count":3}`}, 0,
			`{"greeting":"Hello, x #1"}` + "\n" + `{"greeting":"Hello, x #2"}` + "\n" + `{"greeting":"Hello, x #3"}` + "\n"},
		{"client stream from stdin", "{\"name\":\"a\"}\n\n{\"name\":\"b\"}\n", []string{"greet.GreetService", "GreetClientStream"}, 0,
			`{"greeting":"Hello, a,b"}` + "\n"},
		{"bidi stream from stdin", "{\"name\":\"a\"}\n{\"name\":\"b\"}", []string{"greet.GreetService", "GreetStream"}, 0,
			`{"greeting":"Hello, a"}` + "\n" + `{"greeting":"Hello, b"}` + "\n"},
		{"bad field: usage", "", []string{"greet.GreetService", "Greet", `{"nme":"x"}`}, 2, `unknown field "nme"`},
		{"bad line: usage", "{\"name\":\"a\"}\n{\"name\":2}\n", []string{"greet.GreetService", "GreetStream"}, 2, "request 2"},
		{"argument to a client stream: usage", "", []string{"greet.GreetService", "GreetClientStream", `{}`}, 2, "give no argument"},
		{"unknown method", "", []string{"greet.GreetService", "Nope", `{}`}, 1, "has no method Nope; it has Greet"},
		{"provider error", "", []string{"greet.GreetService", "Greet", `{"name":"fail:9:not now"}`}, 1, "provider: "},
		{"business exception", "", []string{"greet.GreetService", "Greet", `{"name":"fail:17:the business failed"}`}, 1, "exception: the business failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"call", "--url", url}, tt.args...)
			out, errOut, code := run(t, tt.in, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout %s\nstderr %s", code, tt.code, out, errOut)
			}
			if code == 0 && out != tt.out || code != 0 && !strings.Contains(errOut, tt.out) {
				t.Errorf("stdout %q\nstderr %q\nwant %q", out, errOut, tt.out)
			}
		})
	}

	out, errOut, code := run(t, "", "bench", "--url", url, "-n", "50", "-c", "4", "greet.GreetService", "Greet", `{"name":"b"}`)
	var summary struct{ Calls, Errors int }
	if code != 0 || json.Unmarshal([]byte(out), &summary) != nil || summary.Calls != 50 || summary.Errors != 0 {
		t.Errorf("bench: exit %d, %s %s", code, out, errOut)
	}
	if _, errOut, code := run(t, "", "bench", "--url", url, "-n", "5", "greet.GreetService", "GreetStream"); code != 2 ||
		!strings.Contains(errOut, "bench calls unary methods") {
		t.Errorf("bench of a stream: exit %d, %s", code, errOut)
	}
}

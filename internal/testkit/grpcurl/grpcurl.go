// Package grpcurl runs grpcurl (github.com/fullstorydev/grpcurl), the
// command-line gRPC client of the gRPC ecosystem, against a server in a
// test, as a user types it: plaintext, with no proto file, so that it
// learns the services by server reflection. Build installs the pinned
// version through internal/testkit/toolbuild (not in our go.mod); List,
// Describe and Call are grpcurl's list, describe and invoke.
package grpcurl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/toolbuild"
)

// Version is the grpcurl release the tests run.
const Version = "v1.9.3"

// timeout bounds every grpcurl run.
const timeout = 30 * time.Second

// Tool is a built grpcurl.
type Tool struct{ bin string }

// Build returns grpcurl, installing it on first use on this machine.
func Build(t testing.TB) *Tool {
	t.Helper()
	return &Tool{bin: toolbuild.GoInstall(t, "github.com/fullstorydev/grpcurl/cmd/grpcurl", Version)}
}

// Run is grpcurl -plaintext args..., its stdout, and an error that says
// what it printed on stderr when it exited non-zero (a *StatusError when
// the server answered with a status).
func (g *Tool) Run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args = append([]string{"-plaintext", "-max-time", fmt.Sprint(timeout.Seconds())}, args...)
	cmd := exec.CommandContext(ctx, g.bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), nil
	case errors.As(err, &exit) && exit.ExitCode() > 64:
		// grpcurl exits with 64 + the status code of a failed call.
		return stdout.String(), &StatusError{Code: exit.ExitCode() - 64, Message: message(stderr.String()), Stderr: stderr.String()}
	default:
		return stdout.String(), fmt.Errorf("grpcurl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
}

// StatusError is a call the server answered with a status other than OK.
type StatusError struct {
	Code    int // the gRPC status code, as sent (dubbo-go's 17 included)
	Message string
	Stderr  string // all grpcurl printed
}

func (e *StatusError) Error() string { return fmt.Sprintf("status %d: %s", e.Code, e.Message) }

// message is the "Message:" line grpcurl prints for a failed call.
func message(stderr string) string {
	for _, line := range strings.Split(stderr, "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(line), "Message: "); ok {
			return m
		}
	}
	return ""
}

// List is `grpcurl list`: the services the server at addr names by
// reflection.
func (g *Tool) List(addr string) ([]string, error) {
	out, err := g.Run(addr, "list")
	return strings.Fields(out), err
}

// Describe is `grpcurl describe symbol`: grpcurl's rendering of a service,
// method or message the server describes by reflection.
func (g *Tool) Describe(addr, symbol string) (string, error) {
	return g.Run(addr, "describe", symbol)
}

// Call invokes method (service/method) at addr with data, one JSON request
// message, or several in a row for a client stream, and headers ("name:
// value"), and returns the response messages as compact JSON.
func (g *Tool) Call(addr, method, data string, headers ...string) ([]string, error) {
	args := []string{"-d", data}
	for _, h := range headers {
		args = append(args, "-H", h)
	}
	out, err := g.Run(append(args, addr, method)...)
	// grpcurl prints each response as indented JSON, one after another.
	var msgs []string
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var m json.RawMessage
		if derr := dec.Decode(&m); derr == io.EOF {
			break
		} else if derr != nil {
			return msgs, fmt.Errorf("grpcurl printed %q: %v (%v)", out, derr, err)
		}
		var compact bytes.Buffer
		_ = json.Compact(&compact, m)
		msgs = append(msgs, compact.String())
	}
	return msgs, err
}

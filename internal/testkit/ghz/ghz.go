// Package ghz runs ghz (github.com/bojand/ghz), the gRPC load generator,
// against a server in a test or benchmark: an independent client for
// measuring gRPC servers, ours and others, the same way. Build installs
// the pinned version through internal/testkit/toolbuild (not in our
// go.mod); Run makes one run and returns what ghz measured, from its JSON
// report.
package ghz

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/toolbuild"
)

// Version is the ghz release the tests run.
const Version = "v0.93.0"

// Tool is a built ghz.
type Tool struct{ bin string }

// Build returns ghz, installing it on first use on this machine.
func Build(t testing.TB) *Tool {
	t.Helper()
	return &Tool{bin: toolbuild.GoInstall(t, "github.com/bojand/ghz/cmd/ghz", Version)}
}

// Options are one run. Calls or Duration bounds it.
type Options struct {
	// Addr is the server, host:port; the connection is plaintext.
	Addr string
	// Proto is the .proto file of the service (ghz then needs no
	// reflection), Call the method as package.Service/Method, and Data
	// the request message in JSON.
	Proto, Call, Data string
	// Concurrency is how many callers (ghz's workers). Default 1.
	Concurrency int
	// Connections the callers share. Default 1: every caller on one
	// connection, as a gRPC client channel.
	Connections int
	// Calls is how many calls to make; at least Concurrency are made.
	Calls int64
	// Duration is how long to call instead, when Calls is 0.
	Duration time.Duration
	// Metadata are headers sent with every call.
	Metadata map[string]string
}

// Result is what ghz measured in one run.
type Result struct {
	// Calls made, failed ones included; Errors is how many failed.
	Calls, Errors int64
	// Statuses counts the calls by status ("OK", "Unavailable"...), and
	// ErrorMessages the failed ones by their error's text.
	Statuses, ErrorMessages map[string]int64
	// QPS is calls per second over the run.
	QPS float64
	// P50 and P99 are latency percentiles of the successful calls.
	P50, P99 time.Duration
}

// report is the part of ghz's JSON report read here (durations in ns).
type report struct {
	Count   int64   `json:"count"`
	RPS     float64 `json:"rps"`
	Latency []struct {
		Percentage int   `json:"percentage"`
		Latency    int64 `json:"latency"`
	} `json:"latencyDistribution"`
	StatusCodes map[string]int64 `json:"statusCodeDistribution"`
	Errors      map[string]int64 `json:"errorDistribution"`
}

// Run makes one run of opts and returns what ghz measured. Failed calls
// are counted in the result, not an error; the error is for a run that
// could not be made (ghz could not connect, parse the proto, ...).
func (g *Tool) Run(ctx context.Context, opts Options) (Result, error) {
	if opts.Concurrency == 0 {
		opts.Concurrency = 1
	}
	if opts.Connections == 0 {
		opts.Connections = 1
	}
	args := []string{
		"--insecure", "--proto", opts.Proto, "--call", opts.Call, "-d", opts.Data,
		"-c", strconv.Itoa(opts.Concurrency), "--connections", strconv.Itoa(opts.Connections),
		"--format", "json",
	}
	switch {
	case opts.Calls > 0:
		// ghz refuses fewer calls than callers.
		args = append(args, "-n", strconv.FormatInt(max(opts.Calls, int64(opts.Concurrency)), 10))
	case opts.Duration > 0:
		args = append(args, "-z", opts.Duration.String())
	default:
		return Result{}, fmt.Errorf("ghz: Options need Calls or Duration")
	}
	if len(opts.Metadata) > 0 {
		md, err := json.Marshal(opts.Metadata)
		if err != nil {
			return Result{}, fmt.Errorf("ghz: metadata: %w", err)
		}
		args = append(args, "-m", string(md))
	}
	cmd := exec.CommandContext(ctx, g.bin, append(args, opts.Addr)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return Result{}, fmt.Errorf("ghz %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var rep report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return Result{}, fmt.Errorf("ghz printed a report that is not JSON: %v\n%.2000s", err, stdout.String())
	}
	r := Result{Calls: rep.Count, QPS: rep.RPS, Statuses: rep.StatusCodes, ErrorMessages: rep.Errors}
	for code, n := range rep.StatusCodes {
		if code != "OK" {
			r.Errors += n
		}
	}
	for _, l := range rep.Latency {
		switch l.Percentage {
		case 50:
			r.P50 = time.Duration(l.Latency)
		case 99:
			r.P99 = time.Duration(l.Latency)
		}
	}
	return r, nil
}

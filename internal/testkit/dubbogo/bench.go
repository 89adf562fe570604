package dubbogo

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
)

// A Bench is a running dgbench: a stock dubbo-go consumer of sayHello,
// connected to one provider, that makes runs of calls on demand.
type Bench struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Scanner
	log   *syncbuf.Buffer
}

// BenchResult is one run of a Bench, as dgbench reports it.
type BenchResult struct {
	Calls      int64   `json:"calls"`
	Errors     int64   `json:"errors"`
	QPS        float64 `json:"qps"`
	P50us      int64   `json:"p50_us"`
	P99us      int64   `json:"p99_us"`
	MaxUs      int64   `json:"max_us"`
	FirstError string  `json:"first_error"`
}

// StartBench runs dgbench against the provider at url (dubbo://host:port)
// and waits until it has connected and made its warm-up calls. It is
// stopped when the test ends.
func StartBench(t testing.TB, url string) *Bench {
	t.Helper()
	bins := Build(t)
	cmd := exec.Command(bins.Bench, "-serve", "-url", url)
	b := &Bench{cmd: cmd, log: &syncbuf.Buffer{Limit: 1 << 20}}
	cmd.Stderr = b.log
	var err error
	if b.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatalf("dubbogo: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("dubbogo: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("dubbogo: start dgbench: %v", err)
	}
	b.out = bufio.NewScanner(stdout)
	t.Cleanup(b.stop)
	// The warm-up run connects; dgbench exits when it cannot.
	if _, err := b.Run(1, 1); err != nil {
		t.Fatalf("dgbench against %s: %v", url, err)
	}
	return b
}

// Run makes calls sayHello calls from concurrency goroutines and returns
// what dgbench measured. A failed call is counted, not an error.
func (b *Bench) Run(calls int64, concurrency int) (BenchResult, error) {
	var r BenchResult
	if _, err := fmt.Fprintf(b.stdin, "%d %d\n", calls, concurrency); err != nil {
		return r, fmt.Errorf("dgbench: %v\n%s", err, tail(b.log.String(), 4000))
	}
	if !b.out.Scan() {
		return r, fmt.Errorf("dgbench ended: %v\n%s", b.out.Err(), tail(b.log.String(), 4000))
	}
	if err := json.Unmarshal(b.out.Bytes(), &r); err != nil {
		return r, fmt.Errorf("dgbench printed %q: %v", strings.TrimSpace(b.out.Text()), err)
	}
	return r, nil
}

// stop ends dgbench: closing its stdin ends it, SIGKILL after 10s.
func (b *Bench) stop() {
	b.stdin.Close()
	t := time.AfterFunc(10*time.Second, func() { _ = b.cmd.Process.Kill() })
	defer t.Stop()
	for b.out.Scan() { // to the end, as Wait requires
	}
	_ = b.cmd.Wait()
}

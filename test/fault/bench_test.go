//go:build unix

package fault

import (
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/child"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/loadgen"
)

// benchSummary is the JSON line `dubbo bench` prints.
type benchSummary = loadgen.Summary

// A provider frozen (SIGSTOP) under `dubbo bench -c 8`, with Dubbo's
// defaults (timeout 1s, retries 2), costs no call: each call caught on it
// waits for its attempt's timeout and is retried on the other provider,
// as Java's failover does. Before, bench bounded the whole call by the one
// timeout, so every call in flight on the frozen provider failed.
func TestFrozenProviderBench(t *testing.T) {
	bin, err := dubbo.Path()
	if err != nil {
		t.Fatal(err)
	}
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	a, b := startProvider(t, zkAddr), startProvider(t, zkAddr)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "bench", "-c", "8", "-d", "7s",
		"--registry", "zookeeper://"+zkAddr, "--version", providertest.GreeterVersion,
		providertest.GreeterInterface, "sayHello", `"faulttest"`)
	cmd.Dir, cmd.Env = t.TempDir(), child.Env() // no dubbo.toml
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	time.Sleep(2 * time.Second) // bench is calling both providers by now
	b.signal(t, syscall.SIGSTOP)
	time.Sleep(3 * time.Second)
	b.signal(t, syscall.SIGCONT)
	if err := <-done; err != nil {
		t.Fatalf("dubbo bench: %v\n%s", err, stderr.String())
	}
	var s benchSummary
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &s); err != nil {
		t.Fatalf("dubbo bench printed %q, not its summary: %v\n%s", stdout.String(), err, stderr.String())
	}
	t.Logf("dubbo bench -c 8 -d 7s, provider %s frozen for 3s: %d calls, %d errors %v, %.0f calls/s, p99 %dµs, max %dµs, by provider %v",
		b.addr, s.Calls, s.Errors, s.ErrorsByKind, s.QPS, s.P99us, s.MaxUs, s.ByProvider)

	if s.Errors != 0 {
		t.Errorf("%d of %d calls failed (%v); want 0: a timed-out attempt is retried on the other provider", s.Errors, s.Calls, s.ErrorsByKind)
	}
	if s.ByProvider[a.addr] == 0 || s.ByProvider[b.addr] == 0 {
		t.Errorf("by provider %v: want both %s and %s to have served calls", s.ByProvider, a.addr, b.addr)
	}
	// The freeze caught calls (they waited for the 1s timeout) and none
	// waited for two timeouts.
	if max := time.Duration(s.MaxUs) * time.Microsecond; max < 900*time.Millisecond || max >= 1800*time.Millisecond {
		t.Errorf("slowest call %v: want one timeout (about 1s) before the retry, no more", max)
	}
}

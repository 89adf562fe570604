package e2e

import (
	"strings"
	"testing"
)

// TestBenchRPS: with --rps, dubbo bench's latencies count from when each
// call was due, so a provider slower than the rate shows its queue. sleep(20)
// answers in about 20 ms; one caller at 100 calls/s can start one every
// 20 ms at best, so call i waits about 10 ms * i for the caller: the median
// of 40 calls is some 200 ms, where a closed loop (or timing from the actual
// send) reports about 20 ms. At 20 calls/s with 4 callers nothing queues
// and the latencies are the service's own.
func TestBenchRPS(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	cfg := writeConfig(t, dir, p, setup{providerPlugins: []string{"greeter"}})
	startNode(t, "dubbo up", dir, "up", "-c", cfg)
	waitServing(t, dir, p, 1)

	sleep := func(flags ...string) (benchSummary, string) {
		t.Helper()
		args := append([]string{"bench", "--registry", p.registryURL(), "--version", "1.0.0"}, flags...)
		r := dubbo(t, dir, append(args, "org.example.Greeter", "sleep", "20")...)
		return benchResult(t, r), r.stderr
	}
	closed, _ := sleep("-c", "1", "-n", "40")
	open, warning := sleep("-c", "1", "-n", "40", "--rps", "100")
	easy, _ := sleep("-c", "4", "-n", "20", "--rps", "20")
	t.Logf("sleep(20): closed loop p50 %d µs, max %d µs; --rps 100 -c 1: p50 %d µs, max %d µs, %.0f calls/s; --rps 20 -c 4: p50 %d µs, max %d µs",
		closed.P50us, closed.MaxUs, open.P50us, open.MaxUs, open.QPS, easy.P50us, easy.MaxUs)
	if open.Calls != 40 || open.P50us < 3*closed.P50us || open.MaxUs < 300_000 {
		t.Errorf("--rps 100 against a 20 ms service on one caller: p50 %d µs (closed loop %d µs), max %d µs; want the queueing counted: p50 over 3x the closed loop's, max over 300 ms",
			open.P50us, closed.P50us, open.MaxUs)
	}
	if !strings.Contains(warning, "did not keep up with --rps") {
		t.Errorf("--rps 100 reached %.0f calls/s and said nothing; stderr %q", open.QPS, warning)
	}
	if easy.Calls != 20 || easy.P50us*2 > open.P50us {
		t.Errorf("--rps 20 with 4 callers: p50 %d µs; want the service's own latency, well below the queued run's %d µs", easy.P50us, open.P50us)
	}
	if open.MinUs > open.MeanUs || open.MeanUs > open.MaxUs || open.P90us < open.P50us || open.P999us < open.P99us {
		t.Errorf("summary out of order: %+v", open)
	}
}

//go:build unix

package scale

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// consumerProcResult is what a consumer process (`dubbo run
// --role=consumer`) referencing some services of a fan-out run cost.
type consumerProcResult struct {
	refs       int
	start      time.Duration // launch to the QoS /startup probe answering true
	stat       procStat
	goroutines int
}

// runConsumerProc starts `dubbo run --role=consumer` referencing the first
// refs services of f against the registry at zkAddr, with check on (the
// default: it refuses to start unless every reference has a provider), and
// waits until its start-up finished.
func runConsumerProc(t testing.TB, f fanout, zkAddr string, refs int) consumerProcResult {
	t.Helper()
	dir := t.TempDir()
	qos := freeAddr(t)
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "data-dir = %q\n\n[application]\nname = \"scale-consumer-%d\"\n\n[registry]\naddress = %q\n\n[qos]\nlisten = %q\n",
		filepath.Join(dir, "data"), refs, "zookeeper://"+zkAddr, qos)
	for s := range refs {
		fmt.Fprintf(&cfg, "\n[[consumer.references]]\ninterface = %q\nversion = \"1.0.0\"\n", serviceName(s%f.services()))
	}
	if err := os.WriteFile(filepath.Join(dir, "dubbo.toml"), []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p := startDubbo(t, fmt.Sprintf("consumer of %d services", refs), dir, "run", "--role=consumer")
	c := http.Client{Timeout: 5 * time.Second}
	waitFor(t, fmt.Sprintf("the consumer of %d services to start", refs), 2*time.Minute, func() bool {
		if !p.Running() {
			t.Fatalf("the consumer of %d services exited:\n%s", refs, p.Out.String())
		}
		resp, err := c.Get("http://" + qos + "/startup")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	res := consumerProcResult{refs: refs, start: time.Since(start)}
	res.stat = statOf(t, p.Pid())
	res.goroutines = goroutines(t, qos)
	return res
}

func (r consumerProcResult) log(t testing.TB) {
	t.Logf("consumer process of %d services: started in %v, RSS %.0f MB, %d goroutines",
		r.refs, r.start.Round(time.Millisecond), r.stat.rssMB, r.goroutines)
}

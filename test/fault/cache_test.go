//go:build unix

package fault

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
)

// A consumer process (`dubbo run --role=consumer` and its gateway)
// restarted while the registry is down starts from its cache file, and its
// calls succeed, to an interface-level provider and to an
// application-level one (registered only under /services, as dubbo-go's
// providers are by default). Each serves its own group of Greeter, so a
// call's success says which kind of discovery the cache file kept.
func TestConsumerRestartFromCache(t *testing.T) {
	reg := startRegistryProc(t)
	registryURL := "zookeeper://" + reg.addr
	iface := launchProvider(t, providerOpts{registry: registryURL, group: "iface", registerMode: "interface"})
	app := launchProvider(t, providerOpts{registry: registryURL, group: "app", registerMode: "instance"})
	iface.waitReady(t, 20*time.Second)
	app.waitReady(t, 20*time.Second)

	dir := t.TempDir()
	gateway := freeAddr(t)
	cfg := fmt.Sprintf(`data-dir = %q

[application]
name = "faulttest-consumer"

[registry]
address = %q

[[consumer.references]]
interface = %q
version = %q
group = "iface"

[[consumer.references]]
interface = %q
version = %q
group = "app"

[consumer.gateway]
listen = %q
`, filepath.Join(dir, "data"), registryURL,
		providertest.GreeterInterface, providertest.GreeterVersion,
		providertest.GreeterInterface, providertest.GreeterVersion, gateway)
	if err := os.WriteFile(filepath.Join(dir, "dubbo.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	groups := []string{"iface", "app"}

	cons := startDubbo(t, "consumer", dir, "run", "--role=consumer")
	waitGateway(t, cons, gateway, groups, 20*time.Second)
	cons.stop(t)

	reg.kill(t)
	start := time.Now()
	cons = startDubbo(t, "consumer (registry down)", dir, "run", "--role=consumer")
	waitGateway(t, cons, gateway, groups, 15*time.Second)
	ready := time.Since(start)

	down := callGroups(gateway, groups, 100, 0)
	t.Logf("consumer restarted with the registry down: its gateway answered both groups %v after launch; then %v",
		ready.Round(time.Millisecond), down)
	if down.failed != 0 {
		t.Errorf("calls failed after the restart from the cache file: %v", down)
	}

	// The registry comes back: the consumer moves from the cached lists to
	// the registry's (for the application-level provider, once it has its
	// instance's metadata again) without a failed call.
	backc := make(chan groupCalls, 1)
	go func() { backc <- callGroups(gateway, groups, 100_000, 4*time.Second) }()
	time.Sleep(300 * time.Millisecond)
	reg.start(t)
	back := <-backc
	zc := zkConn(t, reg.addr)
	waitFor(t, "the restarted consumer to register in the registry", 15*time.Second, func() bool {
		kids, _, err := zc.Children("/dubbo/" + providertest.GreeterInterface + "/consumers")
		return err == nil && len(kids) == 2
	})
	t.Logf("while the registry came back: %v", back)
	if back.failed != 0 {
		t.Errorf("calls failed while the registry came back: %v", back)
	}
}

// groupCalls counts gateway calls.
type groupCalls struct {
	calls, failed int
	first         error
	took          time.Duration
}

func (g groupCalls) String() string {
	return fmt.Sprintf("%d calls in %v, %d failed (first: %v)", g.calls, g.took.Round(time.Millisecond), g.failed, g.first)
}

// callGroups calls sayHello on each group in turn, n rounds or for d when
// d is set, whichever ends first.
func callGroups(gateway string, groups []string, n int, d time.Duration) groupCalls {
	var c groupCalls
	start := time.Now()
	for i := 0; i < n && (d == 0 || time.Since(start) < d); i++ {
		for _, g := range groups {
			c.calls++
			if err := gatewayHello(gateway, g, fmt.Sprintf("cache-%d", i)); err != nil {
				c.failed++
				if c.first == nil {
					c.first = err
				}
			}
		}
	}
	c.took = time.Since(start)
	return c
}

// waitGateway waits until the consumer's gateway answers sayHello for
// every group.
func waitGateway(t *testing.T, cons *dubboProc, gateway string, groups []string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if !cons.Running() {
			t.Fatalf("%s exited: %v", cons.name, cons.Err())
		}
		var err error
		for _, g := range groups {
			if err = gatewayHello(gateway, g, "ready"); err != nil {
				break
			}
		}
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the gateway did not answer every group within %v; last: %v", cons.name, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var gatewayClient = &http.Client{Timeout: 5 * time.Second}

// gatewayHello calls sayHello(name) on Greeter's group through the gateway.
func gatewayHello(gateway, group, name string) error {
	u := fmt.Sprintf("http://%s/invoke/%s/sayHello?version=%s&group=%s", gateway, providertest.GreeterInterface, providertest.GreeterVersion, group)
	resp, err := gatewayClient.Post(u, "application/json", strings.NewReader(fmt.Sprintf("[%q]", name)))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	want := fmt.Sprintf(`{"result":"Hello, %s"}`, name)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(bytes.TrimSpace(body), []byte(want)) {
		return fmt.Errorf("group %s: %d %s", group, resp.StatusCode, body)
	}
	return nil
}

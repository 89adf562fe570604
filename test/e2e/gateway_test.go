package e2e

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/node/url"
)

// upFile writes body as dir/dubbo.toml, after the sections every test
// here shares (data, registry, protocol on p, with the protocol lines
// given), and returns its path.
func upFile(t *testing.T, dir string, p ports, protocol, body string) string {
	t.Helper()
	head := fmt.Sprintf(`data-dir = %q
[application]
name = "e2e"
[registry]
address = %q
[registry.server]
listen = "127.0.0.1:%d"
4lw-whitelist = ["srvr", "ruok", "mntr"]  # mntr: the tests count znodes and watches
[monitor.server]
port = %d
[console]
listen = "127.0.0.1:%d"
[qos]
listen = ""
[protocol]
host = "127.0.0.1"
port = %d
%s`, filepath.Join(dir, "data"), p.registryURL(), p.registry, p.monitor, p.console, p.provider, protocol)
	path := filepath.Join(dir, "dubbo.toml")
	writeFile(t, path, head+body)
	return path
}

// waitGateway waits until the gateway answers sayHello.
func waitGateway(t *testing.T, n *node, p ports) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	if _, ok := waitFor(20*time.Second, func() bool {
		status, _, err := invoke(client, p, "org.example.Greeter", "sayHello", `["world"]`)
		return err == nil && status == 200 || n.exited()
	}); !ok || n.exited() {
		t.Fatalf("%s: the gateway did not answer sayHello within 20s", n.name)
	}
}

// post sends a request to the gateway with the given headers ("Host"
// sets the Host line) and returns the status and body.
func post(t *testing.T, p ports, path, body string, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, p.gatewayURL(path), strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// mntr reads the registry's znode and watch counts.
func mntr(t *testing.T, p ports) (znodes, watches int) {
	t.Helper()
	out, err := fourLetter(fmt.Sprintf("127.0.0.1:%d", p.registry), "mntr")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		k, v, _ := strings.Cut(line, "\t")
		n, _ := strconv.Atoi(v)
		switch k {
		case "zk_znode_count":
			znodes = n
		case "zk_watch_count":
			watches = n
		}
	}
	return znodes, watches
}

// rssMB is the resident memory of pid in MB.
func rssMB(pid int) float64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

const jsonType = "application/json"

// Gateway calls to services that nobody provides, and to names that are no
// Java names, leave the registry as it was; a provided service outside
// the references gets a reference that is released once idle. Before,
// 300 unknown names added 2,700 znodes and 1,800 watches for good.
func TestGatewayUnknownServices(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	cfg := upFile(t, dir, p, "", fmt.Sprintf(`[provider]
plugins = [%q, %q]
[consumer.on-demand]
idle = "1s"
[[consumer.references]]
interface = "org.example.Greeter"
version = "1.0.0"
[consumer.gateway]
listen = "127.0.0.1:%d"
`, binary("greeter"), binary("chain"), p.gateway))
	up := startNode(t, "dubbo up", dir, "up", "-c", cfg)
	waitGateway(t, up, p)
	zc, _, err := zk.Connect([]string{fmt.Sprintf("127.0.0.1:%d", p.registry)}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer zc.Close()
	// The baseline is the settled environment: both plugins' services
	// registered, and nothing written for a while.
	if _, ok := waitFor(15*time.Second, func() bool {
		kids, _, err := zc.Children("/dubbo/org.example.Chain/providers")
		return err == nil && len(kids) > 0
	}); !ok {
		t.Fatal("org.example.Chain was not registered within 15s")
	}
	var znodes, watches int
	if _, ok := waitFor(10*time.Second, func() bool {
		z, w := mntr(t, p)
		time.Sleep(300 * time.Millisecond)
		znodes, watches = mntr(t, p)
		return z == znodes && w == watches
	}); !ok {
		t.Fatal("the registry's znode and watch counts did not settle within 10s")
	}

	const names = 300
	rss := rssMB(up.pid())
	start := time.Now()
	for i := range names {
		status, body := post(t, p, fmt.Sprintf("/invoke/com.nosuch.S%d/m", i), "[]", map[string]string{"Content-Type": jsonType})
		if status != 503 || !strings.Contains(body, `"no_provider"`) {
			t.Fatalf("POST /invoke/com.nosuch.S%d/m = %d %s, want 503 no_provider", i, status, body)
		}
	}
	took := time.Since(start)
	for _, path := range []string{"/invoke/com..nosuch.S/m", "/invoke/com.nosuch.1S/m", "/invoke/com.nosuch.S/m-1",
		"/invoke/com.nosuch.class/m", "/invoke/com.nosuch.S%0A/m", "/invoke/com.nosuch.S/m?version=1%2F2"} {
		if status, body := post(t, p, path, "[]", map[string]string{"Content-Type": jsonType}); status != 400 {
			t.Errorf("POST %s = %d %s, want 400", path, status, body)
		}
	}
	znodesAfter, watchesAfter := mntr(t, p)
	t.Logf("%d unknown names in %v: znodes %d -> %d, watches %d -> %d, dubbo up RSS %.1f -> %.1f MB",
		names, took.Round(time.Millisecond), znodes, znodesAfter, watches, watchesAfter, rss, rssMB(up.pid()))
	if znodesAfter != znodes || watchesAfter != watches {
		t.Errorf("unknown names changed the registry: znodes %d -> %d, watches %d -> %d", znodes, znodesAfter, watches, watchesAfter)
	}

	// Chain is provided but not referenced: an on-demand reference, its
	// consumer node there while in use and gone once idle.
	consumers := func() int {
		kids, _, err := zc.Children("/dubbo/org.example.Chain/consumers")
		if err != nil {
			return 0
		}
		n := 0
		for _, k := range kids {
			if u, err := url.Decode(k); err == nil && u.Param("application") == "e2e" {
				n++
			}
		}
		return n
	}
	status, body := post(t, p, "/invoke/org.example.Chain/relay?version=1.0.0", `["on demand"]`, map[string]string{"Content-Type": jsonType})
	if status != 200 || body != `{"result":"Chain: Hello, on demand"}` {
		t.Fatalf("POST Chain relay = %d %s", status, body)
	}
	if n := consumers(); n != 1 {
		t.Errorf("%d consumer nodes of the gateway under org.example.Chain after a call, want 1", n)
	}
	released, ok := waitFor(10*time.Second, func() bool { return consumers() == 0 })
	if !ok {
		t.Errorf("the idle on-demand reference to org.example.Chain was not released within 10s (idle = 1s)")
	}
	t.Logf("the on-demand reference to org.example.Chain was released %v after its call (idle 1s)", released.Round(time.Millisecond))

	stopped := time.Now()
	if code := up.stop(t); code != 0 {
		t.Errorf("dubbo up exited %d after Ctrl-C", code)
	}
	t.Logf("dubbo up stopped %v after Ctrl-C", time.Since(stopped).Round(time.Millisecond))
}

// A web page cannot use the gateway: a text/plain POST from a foreign
// Origin and a request through a rebound DNS name are refused (both were
// answered 200 before); a plain local JSON call works. The gateway will
// not listen beyond loopback without a token.
func TestGatewayRefusesWebPages(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	cfg := upFile(t, dir, p, "", fmt.Sprintf(`[provider]
plugins = [%q]
[[consumer.references]]
interface = "org.example.Greeter"
version = "1.0.0"
[consumer.gateway]
listen = "127.0.0.1:%d"
`, binary("greeter"), p.gateway))
	up := startNode(t, "dubbo up", dir, "up", "-c", cfg)
	waitGateway(t, up, p)

	const path = "/invoke/org.example.Greeter/sayHello?version=1.0.0"
	own := fmt.Sprintf("http://127.0.0.1:%d", p.gateway)
	for _, tt := range []struct {
		name    string
		headers map[string]string
		status  int
		kind    string
	}{
		{"text/plain from a foreign page", map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403, "forbidden"},
		{"text/plain", map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type"},
		{"a form", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
		{"JSON from a foreign page", map[string]string{"Content-Type": jsonType, "Origin": "http://evil.example"}, 403, "forbidden"},
		{"a rebound DNS name", map[string]string{"Content-Type": jsonType, "Host": fmt.Sprintf("attacker.example:%d", p.gateway)}, 403, "forbidden"},
		{"local JSON", map[string]string{"Content-Type": jsonType}, 200, ""},
		{"its own page", map[string]string{"Content-Type": jsonType, "Origin": own}, 200, ""},
		{"localhost", map[string]string{"Content-Type": jsonType, "Host": fmt.Sprintf("localhost:%d", p.gateway)}, 200, ""},
	} {
		status, body := post(t, p, path, `["page"]`, tt.headers)
		if status != tt.status || (tt.kind != "" && !strings.Contains(body, `"kind":"`+tt.kind+`"`)) ||
			(tt.status == 200 && body != `{"result":"Hello, page"}`) {
			t.Errorf("%s: %d %s, want %d %s", tt.name, status, body, tt.status, tt.kind)
		}
	}
	if code := up.stop(t); code != 0 {
		t.Errorf("dubbo up exited %d after Ctrl-C", code)
	}

	// Beyond loopback without a token: refused before it listens. The
	// address is TEST-NET-1 (RFC 5737), which no interface here has, so
	// nothing binds beyond loopback even if the refusal were gone.
	r := dubbo(t, dir, "up", "-c", cfg, "--set", fmt.Sprintf("consumer.gateway.listen=192.0.2.1:%d", p.gateway))
	if r.code != 1 || !strings.Contains(r.stderr, "consumer.gateway.token") {
		t.Errorf("dubbo up with the gateway on 192.0.2.1 and no token: exit %d, stderr %q; want exit 1 naming consumer.gateway.token", r.code, lastLines(r.stderr, 3))
	}
}

// Timeouts reach gateway calls from wherever they are set: the defaults,
// the reference, the method, ?timeout=; integers are milliseconds in the
// file and in --set. sleep(1500) outlasts Dubbo's default 1s, so each
// setting of 3s must be the one in force. Before, every variant failed
// "timed out after 1s", and integer durations were nanoseconds
// (protocol.heartbeat = 60000 broke every connection).
func TestGatewayTimeouts(t *testing.T) {
	const sleep = `[1500]`
	reference := "[[consumer.references]]\ninterface = \"org.example.Greeter\"\nversion = \"1.0.0\"\n"
	for _, tt := range []struct {
		name, body, query string
		sets              []string
	}{
		{"no setting: Dubbo's 1s", reference, "", nil},
		{"defaults", "[consumer.defaults]\ntimeout = \"3s\"\n" + reference, "", nil},
		{"defaults in milliseconds", "[consumer.defaults]\ntimeout = 3000\n" + reference, "", nil},
		{"reference", "[[consumer.references]]\ninterface = \"org.example.Greeter\"\nversion = \"1.0.0\"\ntimeout = 3000\n", "", nil},
		{"method", reference + "[[consumer.references.methods]]\nname = \"sleep\"\ntimeout = \"3s\"\n", "", nil},
		{"query", reference, "&timeout=3s", nil},
		{"--set in milliseconds", reference, "", []string{"consumer.defaults.timeout=3000"}},
		{"--set references as a TOML array", "", "",
			[]string{`consumer.references=[{interface = "org.example.Greeter", version = "1.0.0", timeout = 3000}]`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := freePorts(t, 1)
			cfg := upFile(t, dir, p, "heartbeat = 60000\n", fmt.Sprintf("[provider]\nplugins = [%q]\n[consumer.gateway]\nlisten = \"127.0.0.1:%d\"\n%s",
				binary("greeter"), p.gateway, tt.body))
			args := []string{"up", "-c", cfg}
			for _, s := range tt.sets {
				args = append(args, "--set", s)
			}
			up := startNode(t, "dubbo up", dir, args...)
			waitGateway(t, up, p)
			start := time.Now()
			status, got := post(t, p, "/invoke/org.example.Greeter/sleep?version=1.0.0"+tt.query, sleep, map[string]string{"Content-Type": jsonType})
			took := time.Since(start).Round(time.Millisecond)
			if strings.HasPrefix(tt.name, "no setting") {
				// Each of the 3 attempts (retries 2) times out after 1s.
				if status != 504 || !strings.Contains(got, `"kind":"timeout"`) {
					t.Errorf("sleep(1500) with the default 1s timeout = %d %s after %v, want 504 timeout", status, got, took)
				}
			} else if status != 200 || got != `{"result":"slept"}` {
				t.Errorf("sleep(1500) with a 3s timeout = %d %s after %v, want 200 slept", status, got, took)
			}
			up.stop(t)
		})
	}
}

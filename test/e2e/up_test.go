package e2e

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestUp runs the shipped environment (registry, two greeter providers, a
// consumer with its gateway) as `dubbo up`, times how soon it answers,
// uses it as a user would, and stops it with Ctrl-C.
func TestUp(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 2)
	cfg := writeConfig(t, dir, p, setup{
		replicas:        2,
		providerPlugins: []string{"greeter", "chain"},
		references:      []string{"org.example.Greeter"},
		gateway:         true,
	})

	launched := time.Now()
	up := startNode(t, "dubbo up", dir, "up", "-c", cfg)
	measureStartup(t, dir, p, launched, up)

	t.Run("call", func(t *testing.T) {
		for _, tt := range []struct {
			method string
			args   []string
			code   int
			stdout string // exact, when code is 0
			stderr string // contained, when code is not 0
		}{
			{"sayHello", []string{`"world"`}, 0, `"Hello, world"`, ""},
			{"add", []string{"2", "3"}, 0, "5", ""},
			{"echoMap", []string{`{"a":1,"b":"x","c":[true,null]}`}, 0, `{"a":1,"b":"x","c":[true,null]}`, ""},
			{"fail", []string{`"boom"`}, 1, "", "exception java.lang.RuntimeException: boom"},
			{"sleep", []string{"10"}, 0, `"slept"`, ""},
			{"sleep", []string{"3000"}, 1, "", "timeout"},
			{"noSuchMethod", []string{`"x"`}, 1, "", "has no method noSuchMethod; it has add, echoMap, fail, sayHello, sleep"},
		} {
			r := call(t, dir, p, "org.example.Greeter", tt.method, tt.args...)
			got := strings.TrimSpace(r.stdout)
			if r.code != tt.code {
				t.Errorf("call %s %v: exit %d, want %d (stdout %q, stderr %q)", tt.method, tt.args, r.code, tt.code, got, r.stderr)
				continue
			}
			if tt.code == 0 && got != tt.stdout {
				t.Errorf("call %s %v printed %q, want %q", tt.method, tt.args, got, tt.stdout)
			}
			if tt.code != 0 && (!strings.Contains(r.stderr, tt.stderr) || got != "") {
				t.Errorf("call %s %v: stdout %q, stderr %q; want nothing on stdout and %q on stderr", tt.method, tt.args, got, r.stderr, tt.stderr)
			}
			// Each attempt has the 1s timeout and failover retries a timed-out
			// attempt (retries 2), as Java Dubbo: three attempts, about 3s.
			if tt.method == "sleep" && tt.code != 0 && r.took > 4500*time.Millisecond {
				t.Errorf("call sleep 3000 with the default 1s timeout took %v; it should give up after its 3 attempts of 1s", r.took)
			}
		}
		r := dubbo(t, dir, "call", "--registry", p.registryURL(), "org.example.Nobody", "hello")
		if r.code != 1 || !strings.Contains(r.stderr, "no_provider") {
			t.Errorf("call of an unknown service: exit %d, stderr %q; want exit 1 and no_provider", r.code, r.stderr)
		}
	})

	t.Run("gateway", func(t *testing.T) {
		client := &http.Client{Timeout: 5 * time.Second}
		for _, tt := range []struct {
			method, args string
			status       int
			body         string
		}{
			{"sayHello", `["world"]`, 200, `{"result":"Hello, world"}`},
			{"add", `[2,3]`, 200, `{"result":5}`},
			{"echoMap", `[{"k":"v"}]`, 200, `{"result":{"k":"v"}}`},
			{"fail", `["boom"]`, 500, `{"error":{"kind":"exception","class":"java.lang.RuntimeException","message":"boom"}}`},
		} {
			status, body, err := invoke(client, p, "org.example.Greeter", tt.method, tt.args)
			if err != nil {
				t.Fatalf("POST %s: %v", tt.method, err)
			}
			if status != tt.status || !sameJSON(body, tt.body) {
				t.Errorf("POST /invoke/org.example.Greeter/%s %s = %d %s, want %d %s", tt.method, tt.args, status, body, tt.status, tt.body)
			}
		}
		resp, err := client.Get(p.gatewayURL("/healthz"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET /healthz = %d", resp.StatusCode)
		}
	})

	t.Run("bench", func(t *testing.T) {
		s := bench(t, dir, "--registry", p.registryURL(), "-n", "200", "-c", "4")
		if s.Calls != 200 || s.Errors != 0 {
			t.Errorf("bench -n 200: calls %d errors %d (%v), want 200 and 0", s.Calls, s.Errors, s.ErrorsByKind)
		}
		for i := range 2 {
			if s.ByProvider[p.providerAddr(i)] == 0 {
				t.Errorf("bench by_provider %v: provider %s served nothing", s.ByProvider, p.providerAddr(i))
			}
		}
		t.Logf("bench -n 200 -c 4: %.0f calls/s, p50 %dµs, p99 %dµs, by provider %v", s.QPS, s.P50us, s.P99us, s.ByProvider)
	})

	t.Run("chain", func(t *testing.T) {
		// Chain's handler calls Greeter.sayHello back through the node.
		r := call(t, dir, p, "org.example.Chain", "relay", `"world"`)
		if got := strings.TrimSpace(r.stdout); r.code != 0 || got != `"Chain: Hello, world"` {
			t.Errorf("call Chain relay: exit %d, stdout %q, stderr %q; want \"Chain: Hello, world\"", r.code, got, r.stderr)
		}
		r = call(t, dir, p, "org.example.Chain", "greetAll", `["a","b"]`)
		if got := strings.TrimSpace(r.stdout); r.code != 0 || got != `"Chain: Hello, a; Hello, b"` {
			t.Errorf("call Chain greetAll: exit %d, stdout %q, stderr %q", r.code, got, r.stderr)
		}
		status, body, err := invoke(&http.Client{Timeout: 5 * time.Second}, p, "org.example.Chain", "relay", `["http"]`)
		if err != nil || status != 200 || body != `{"result":"Chain: Hello, http"}` {
			t.Errorf("POST /invoke/org.example.Chain/relay = %d %s %v", status, body, err)
		}
	})

	t.Run("registry", func(t *testing.T) {
		got, err := fourLetter(net.JoinHostPort("127.0.0.1", strconv.Itoa(p.registry)), "ruok")
		if err != nil || got != "imok" {
			t.Errorf("ruok to the registry = %q, %v; want imok", got, err)
		}
	})

	plugins := len(up.pluginPIDs("greeter")) + len(up.pluginPIDs("chain"))
	if plugins != 4 {
		t.Errorf("dubbo up runs %d plugin processes, want 4 (greeter and chain for each of 2 providers)", plugins)
	}
	// Ctrl-C; stop checks that no plugin process is left.
	if code := up.stop(t); code != 0 {
		t.Errorf("dubbo up exited %d after Ctrl-C, want 0", code)
	}
	if !strings.Contains(up.stdout.String(), "ready") {
		t.Errorf("dubbo up never said it was ready:\n%s", up.stdout.String())
	}
	if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.registry)), time.Second); err == nil {
		c.Close()
		t.Errorf("the registry port still accepts connections after dubbo up stopped")
	}
}

// measureStartup polls `dubbo call` and the gateway every 20 ms from just
// after `dubbo up` was launched until each first answers, and logs both
// times from the launch.
func measureStartup(t *testing.T, dir string, p ports, launched time.Time, up *node) {
	t.Helper()
	const bound = 5 * time.Second
	var wg sync.WaitGroup
	var viaCall, viaGateway time.Duration
	var callOK, gatewayOK bool
	wg.Add(2)
	go func() {
		defer wg.Done()
		client := &http.Client{Timeout: time.Second}
		_, gatewayOK = waitFor(2*bound, func() bool {
			status, body, err := invoke(client, p, "org.example.Greeter", "sayHello", `["world"]`)
			return err == nil && status == 200 && body == `{"result":"Hello, world"}` || up.exited()
		})
		viaGateway = time.Since(launched)
	}()
	go func() {
		defer wg.Done()
		_, callOK = waitFor(2*bound, func() bool {
			r, err := runDubbo(dir, "call", "--registry", p.registryURL(), "--version", "1.0.0", "org.example.Greeter", "sayHello", `"world"`)
			return err == nil && r.code == 0 && strings.TrimSpace(r.stdout) == `"Hello, world"` || up.exited()
		})
		viaCall = time.Since(launched)
	}()
	wg.Wait()
	if up.exited() {
		t.Fatalf("dubbo up exited while starting")
	}
	if !callOK || !gatewayOK {
		t.Fatalf("dubbo up did not answer within %v (dubbo call ok %v, gateway ok %v)", 2*bound, callOK, gatewayOK)
	}
	t.Logf("start to first answered call: dubbo call %v, gateway %v", viaCall.Round(time.Millisecond), viaGateway.Round(time.Millisecond))
	if viaCall > bound || viaGateway > bound {
		t.Errorf("first answered call after %v (dubbo call) and %v (gateway); want under %v", viaCall, viaGateway, bound)
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b string) bool {
	var va, vb any
	if json.Unmarshal([]byte(a), &va) != nil || json.Unmarshal([]byte(b), &vb) != nil {
		return a == b
	}
	ja, _ := json.Marshal(va)
	jb, _ := json.Marshal(vb)
	return string(ja) == string(jb)
}

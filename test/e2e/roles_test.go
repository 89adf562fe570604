package e2e

import (
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSeparateRoles runs the registry, a provider and a consumer as three
// `dubbo run --role=...` processes sharing one config file, as on three
// machines, and calls through the consumer's gateway: Greeter directly, and
// Chain, whose handler calls Greeter back through the provider process's
// own consumer.
func TestSeparateRoles(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	cfg := writeConfig(t, dir, p, setup{
		providerPlugins: []string{"greeter", "chain"},
		references:      []string{"org.example.Greeter", "org.example.Chain"},
		gateway:         true,
	})
	registryAddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p.registry))

	registry := startNode(t, "registry", dir, "run", "--role=registry", "-c", cfg)
	if _, ok := waitFor(10*time.Second, func() bool {
		got, err := fourLetter(registryAddr, "ruok")
		return err == nil && got == "imok" || registry.exited()
	}); !ok || registry.exited() {
		t.Fatalf("the registry did not answer ruok within 10s")
	}

	provider := startNode(t, "provider", dir, "run", "--role=provider", "-c", cfg)
	if _, ok := waitFor(15*time.Second, func() bool {
		r := call(t, dir, p, "org.example.Chain", "relay", `"world"`)
		return r.code == 0 || provider.exited()
	}); !ok || provider.exited() {
		t.Fatalf("the provider did not serve Chain within 15s")
	}

	consumer := startNode(t, "consumer", dir, "run", "--role=consumer", "-c", cfg)
	client := &http.Client{Timeout: 2 * time.Second}
	took, ok := waitFor(15*time.Second, func() bool {
		status, body, err := invoke(client, p, "org.example.Greeter", "sayHello", `["world"]`)
		return err == nil && status == 200 && body == `{"result":"Hello, world"}` || consumer.exited()
	})
	if !ok || consumer.exited() {
		t.Fatalf("the consumer's gateway did not answer sayHello within 15s")
	}
	t.Logf("the consumer's gateway answered %v after the consumer was launched", took.Round(time.Millisecond))
	status, body, err := invoke(client, p, "org.example.Chain", "relay", `["roles"]`)
	if err != nil || status != 200 || body != `{"result":"Chain: Hello, roles"}` {
		t.Errorf("POST /invoke/org.example.Chain/relay = %d %s %v, want 200 {\"result\":\"Chain: Hello, roles\"}", status, body, err)
	}

	// The consumer and the provider announce only their own role.
	if out := consumer.stdout.String(); !strings.Contains(out, "gateway") || strings.Contains(out, "provider ") || strings.Contains(out, "registry ") {
		t.Errorf("dubbo run --role=consumer printed:\n%s", out)
	}
	if n := len(provider.pluginPIDs("greeter")) + len(provider.pluginPIDs("chain")); n != 2 {
		t.Errorf("the provider process runs %d plugin processes, want 2", n)
	}
	for _, n := range []*node{consumer, provider, registry} {
		if code := n.stop(t); code != 0 {
			t.Errorf("%s exited %d after Ctrl-C, want 0", n.name, code)
		}
	}
}

// TestBadConfig: a config mistake stops `dubbo up` at once, before anything
// starts, with the file, the line and the key.
func TestBadConfig(t *testing.T) {
	p := freePorts(t, 1)
	listen := "listen = \"127.0.0.1:" + strconv.Itoa(p.registry) + "\"\n"
	for _, tt := range []struct {
		name, file string
		want       string
	}{
		{"bad duration", "[registry.server]\n" + listen + "tick-time = \"soon\"\n",
			"dubbo.toml:3: key registry.server.tick-time:"},
		{"unknown key", "data-dir = \"data\"\n\n[registry.server]\n" + listen + "lisen = \"127.0.0.1:1\"\n",
			"dubbo.toml:5: key registry.server.lisen: unknown key"},
		{"wrong type", "[registry.server]\n" + listen + "[protocol]\nport = \"twenty\"\n",
			"dubbo.toml:4: key protocol.port:"},
		{"TOML syntax", "[registry.server]\n" + listen + "[protocol\n",
			"dubbo.toml: line 3"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "dubbo.toml"), []byte(tt.file), 0o644); err != nil {
				t.Fatal(err)
			}
			r := dubbo(t, dir, "up", "-c", "dubbo.toml")
			if r.code == 0 || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("dubbo up with\n%s\nexited %d, stderr %q; want non-zero and %q", tt.file, r.code, r.stderr, tt.want)
			}
			if r.took > 5*time.Second {
				t.Errorf("dubbo up took %v to refuse its config", r.took)
			}
			if c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.registry)), time.Second); err == nil {
				c.Close()
				t.Errorf("something listens on the registry port after dubbo up refused its config")
			}
		})
	}
}

// TestCallWithoutRegistry: `dubbo call` against a registry that is not
// running gives up within seconds and says what to check.
func TestCallWithoutRegistry(t *testing.T) {
	p := freePorts(t, 1) // nothing listens on p.registry
	r := dubbo(t, t.TempDir(), "call", "--registry", p.registryURL(), "--version", "1.0.0", "org.example.Greeter", "sayHello", `"world"`)
	if r.code != 1 || !strings.Contains(r.stderr, "is the registry running?") {
		t.Errorf("dubbo call without a registry: exit %d, stderr %q; want exit 1 and a hint to check the registry", r.code, r.stderr)
	}
	if r.took > 10*time.Second {
		t.Errorf("dubbo call without a registry took %v to give up", r.took)
	}
	t.Logf("gave up after %v: %s", r.took.Round(time.Millisecond), strings.TrimSpace(r.stderr))
}

package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCallExitCodes: dubbo call and dubbo bench exit 0 on success, 1 when
// a call failed (bench: any call, after printing its summary) and 2 on a
// usage or config error, before any call; the message says what is wrong.
// Before, every failure was 1.
func TestCallExitCodes(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	cfg := writeConfig(t, dir, p, setup{providerPlugins: []string{"greeter"}})
	startNode(t, "dubbo up", dir, "up", "-c", cfg)
	waitServing(t, dir, p, 1)
	bad := filepath.Join(t.TempDir(), "bad.toml")
	if err := os.WriteFile(bad, []byte("[consumer.defaults]\nretires = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badLB := filepath.Join(t.TempDir(), "lb.toml")
	if err := os.WriteFile(badLB, []byte("[consumer.defaults]\nloadbalance = \"roundrobbin\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reg := []string{"--registry", p.registryURL(), "--version", "1.0.0"}
	hello := []string{"org.example.Greeter", "sayHello", `"x"`}
	with := func(parts ...[]string) []string {
		var out []string
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"call", with([]string{"call"}, reg, hello), 0, ""},
		{"call: exception", with([]string{"call"}, reg, []string{"org.example.Greeter", "fail", `"boom"`}), 1, "exception java.lang.RuntimeException: boom"},
		{"call: no provider", with([]string{"call"}, reg, []string{"org.example.Nobody", "m"}), 1, "no_provider"},
		{"call: unknown flag", with([]string{"call", "--bogus"}, reg, hello), 2, "unknown flag: --bogus"},
		{"call: no method", with([]string{"call"}, reg, []string{"org.example.Greeter"}), 2, "requires at least 2 arg(s)"},
		{"call: argument not JSON", with([]string{"call"}, reg, []string{"org.example.Greeter", "sayHello", "x"}), 2, "is not JSON"},
		{"call: unknown load balancer", with([]string{"call", "--loadbalance", "roundrobbin"}, reg, hello), 2, `--loadbalance: unknown load balancer "roundrobbin" (did you mean roundrobin?); known: consistenthash`},
		{"call: unknown cluster", with([]string{"call", "--cluster", "failover2"}, reg, hello), 2, "unknown; use one of available, broadcast, failback, failfast, failover"},
		{"call: attachment without =", with([]string{"call", "--attachment", "dubbo.tag"}, reg, hello), 2, "want key=value"},
		{"call: config file refused", with([]string{"call", "-c", bad}, reg, hello), 2, "bad.toml:2: key consumer.defaults.retires: unknown key"},
		{"call: load balancer misspelt in the file", with([]string{"call", "-c", badLB}, reg, hello), 2,
			`lb.toml:2: key consumer.defaults.loadbalance: unknown load balancer "roundrobbin" (did you mean roundrobin?)`},
		{"call: --set refused", with([]string{"call", "--set", "consumer.defaults.timeout=soon"}, reg, hello), 2, "consumer.defaults.timeout"},
		{"call: missing config file", with([]string{"call", "-c", filepath.Join(dir, "none.toml")}, reg, hello), 2, "none.toml"},
		{"bench: exceptions", with([]string{"bench", "-n", "5"}, reg, []string{"org.example.Greeter", "fail", `"boom"`}), 1, "5 of 5 calls failed"},
		{"bench: -c 0", with([]string{"bench", "-c", "0"}, reg, hello), 2, "-c 0"},
		{"bench: negative --rps", with([]string{"bench", "--rps", "-5"}, reg, hello), 2, "--rps"},
		{"bench: unknown flag", with([]string{"bench", "--bogus"}, reg, hello), 2, "unknown flag"},
		{"bench: config file refused", with([]string{"bench", "--config", bad}, reg, hello), 2, "unknown key"},
		{"unknown command", []string{"frob"}, 2, `unknown command "frob"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := dubbo(t, dir, tt.args...)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.says) {
				t.Errorf("dubbo %v: exit %d, stderr %q; want exit %d and %q", tt.args, r.code, r.stderr, tt.code, tt.says)
			}
			if tt.code == 2 && r.took > 5*time.Second {
				t.Errorf("dubbo %v took %v to refuse its input", tt.args, r.took)
			}
			if strings.HasPrefix(tt.name, "bench: exceptions") {
				var s benchSummary
				if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &s); err != nil || s.Calls != 5 || s.Errors != 5 {
					t.Errorf("bench with failing calls printed %q (%v); want its summary with 5 errors", r.stdout, err)
				}
			}
		})
	}
}

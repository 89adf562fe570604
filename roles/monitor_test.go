package roles

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/config"
	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
)

var statsLine = regexp.MustCompile(`stats +http://([^/\s]+)/api/v1/stats`)

// monitorWithoutRegistry is the monitor role's config with no registry,
// its HTTP server on listen.
func monitorWithoutRegistry(t *testing.T, listen string) *config.File {
	return loadConfig(t, fmt.Sprintf(`
registry.address = ""
monitor.server.port = -1
protocol.host = "127.0.0.1"
console.listen = %q
`, listen))
}

// TestMonitorWithoutRegistry: `dubbo run --role=monitor` with
// registry.address = "" (its nodes name it in monitor.address) has no web
// console to show, and serves the statistics API and /metrics on
// console.listen as the console serves them: the console's error shape and
// security headers, and beyond loopback not without console.token.
func TestMonitorWithoutRegistry(t *testing.T) {
	t.Run("loopback", func(t *testing.T) {
		out, stop := startRun(t, monitorWithoutRegistry(t, "127.0.0.1:0"), []string{Monitor}, slog.New(slog.DiscardHandler))
		m := statsLine.FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("no stats line in\n%s", out.String())
		}
		if strings.Contains(out.String(), "console ") {
			t.Errorf("a web console is announced without a registry:\n%s", out.String())
		}
		base := "http://" + m[1]
		for _, tc := range []struct {
			path, kind, says string
			code             int
		}{
			{"/api/v1/stats?interface=org.example.Greeter", "", "[]", 200},
			{"/metrics", "", "dubbo_monitor_samples_received_total", 200},
			{"/", "", "/api/v1/stats", 200},
			{"/api/v1/stats", "bad_request", "interface is required", 400},
			{"/services", "not_found", "", 404},
		} {
			resp, err := http.Get(base + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.code || !strings.Contains(string(body), tc.says) {
				t.Errorf("GET %s: %d %s, want %d with %q", tc.path, resp.StatusCode, body, tc.code, tc.says)
			}
			if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") ||
				resp.Header.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("GET %s: Content-Security-Policy %q, X-Content-Type-Options %q", tc.path, csp, resp.Header.Get("X-Content-Type-Options"))
			}
			var eb struct {
				Error struct{ Kind, Message string }
			}
			if tc.kind != "" && (json.Unmarshal(body, &eb) != nil || eb.Error.Kind != tc.kind) {
				t.Errorf("GET %s: %s, want the error kind %q", tc.path, body, tc.kind)
			}
		}
		stop()
	})

	t.Run("beyond loopback without a token", func(t *testing.T) {
		// 192.0.2.10 (TEST-NET-1) is no address of this machine: the
		// refusal must come before any listening.
		var out syncbuf.Buffer
		err := Run(testCtx(t), monitorWithoutRegistry(t, "192.0.2.10:8080"), []string{Monitor}, Options{Out: &out, Logger: slog.New(slog.DiscardHandler)})
		if err == nil || !strings.Contains(err.Error(), "console.token") {
			t.Fatalf("Run: %v, want a refusal naming console.token", err)
		}
		if strings.Contains(out.String(), "monitor    dubbo://") {
			t.Errorf("the monitor started before the refusal:\n%s", out.String())
		}
	})
}

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// A plugin that is down makes the QoS port's ready probe answer 503 and
// name it with the reason, while live says the process runs and ls shows
// what the other plugin serves; and a second process on a QoS port that
// is taken warns and runs on.
func TestQoSReadyNamesDownPlugin(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	bad, _ := shellPlugin(t, dir, "bad.sh", "echo 'cannot open config' >&2\nexit 3\n")
	cfg := pluginConfig(t, dir, p, []string{binary("greeter"), bad}, nil)
	qos := fmt.Sprintf("qos.listen=127.0.0.1:%d", p.qos)
	up := startNodeEnv(t, "dubbo up", dir, []string{"DUBBO_PLUGIN_START_TIMEOUT=1s"}, "up", "-c", cfg, "--set", qos)
	if _, ok := waitFor(20*time.Second, func() bool { return strings.Contains(up.stdout.String(), "ready") || up.exited() }); !ok || up.exited() {
		t.Fatal("dubbo up printed no ready line within 20s")
	}
	code, body, err := qosGet(p.qosURL("/ready"))
	if err != nil || code != 503 || !strings.Contains(body, "plugin bad.sh (provider 1) is down") ||
		!strings.Contains(body, "exited with status 3") {
		t.Errorf("ready with a plugin down: %d %q %v; want 503 naming bad.sh and why", code, body, err)
	}
	if code, body, _ := qosGet(p.qosURL("/live")); code != 200 || body != "true" {
		t.Errorf("live: %d %q", code, body)
	}
	if code, body, _ := qosGet(p.qosURL("/ls")); code != 200 || !strings.Contains(body, "org.example.Greeter:1.0.0") {
		t.Errorf("ls: %d %q", code, body)
	}

	// Another process on the same QoS port: a warning, and it serves.
	dir2 := t.TempDir()
	p2 := freePorts(t, 1)
	cfg2 := pluginConfig(t, dir2, p2, []string{binary("greeter")}, nil)
	second := startNode(t, "second dubbo up", dir2, "up", "-c", cfg2, "--set", qos)
	if _, ok := waitFor(20*time.Second, func() bool { return strings.Contains(second.stdout.String(), "ready") || second.exited() }); !ok || second.exited() {
		t.Fatal("the second dubbo up printed no ready line within 20s")
	}
	if log := second.stderr.String(); !strings.Contains(log, "no QoS port for this process") || !strings.Contains(log, "already in use") {
		t.Errorf("the second process did not warn about the QoS port:\n%s", lastLines(log, 20))
	}
	if r := call(t, dir2, p2, "org.example.Greeter", "sayHello", `"two"`); r.code != 0 {
		t.Errorf("the second process does not serve: %s", r.stderr)
	}
	second.stop(t)
	up.stop(t)
}

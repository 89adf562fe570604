package e2e

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

var (
	callerReply   = regexp.MustCompile(`msg=sayHello .*plugin=greeter-caller .*reply="Hello, world"`)
	callerAtDebug = regexp.MustCompile(`level=DEBUG msg=sayHello .*plugin=greeter-caller `)
)

// TestGreeterCaller runs the consumer-side example plugin: it serves
// nothing, and calls sayHello through the node a few times a second from
// the moment the node has connected it. Its first answer is logged, the
// others only at debug level: they stay out of dubbo up's terminal (warn
// by default).
func TestGreeterCaller(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 2)
	cfg := writeConfig(t, dir, p, setup{
		replicas:        2,
		providerPlugins: []string{"greeter"},
		consumerPlugins: []string{"greeter-caller"},
		references:      []string{"org.example.Greeter"},
	})
	up := startNode(t, "dubbo up", dir, "up", "-c", cfg, "--log-level", "debug")
	took, ok := waitFor(10*time.Second, func() bool {
		return len(callerReply.FindAllString(up.stderr.String(), -1)) >= 3 || up.exited()
	})
	if !ok || up.exited() {
		t.Fatalf("the node's log shows fewer than 3 answers to greeter-caller within 10s")
	}
	t.Logf("3 answers logged %v after launch", took.Round(time.Millisecond))
	// Each answer names the provider that gave it; both serve in turn.
	for _, port := range []int{p.provider, p.provider + 1} {
		want := fmt.Sprintf("provider=127.0.0.1:%d", port)
		if _, ok := waitFor(10*time.Second, func() bool { return strings.Contains(up.stderr.String(), want) }); !ok {
			t.Errorf("no greeter-caller answer logged %s", want)
		}
	}
	if strings.Contains(up.stderr.String(), "sayHello failed") {
		t.Errorf("greeter-caller logged failed calls with both providers up")
	}
	log := up.stderr.String()
	answers, atDebug := len(callerReply.FindAllString(log, -1)), len(callerAtDebug.FindAllString(log, -1))
	if atDebug != answers-1 {
		t.Errorf("%d of %d answers logged at debug level, want all but the first", atDebug, answers)
	}
	if len(up.pluginPIDs("greeter-caller")) != 1 {
		t.Errorf("greeter-caller is not running as a child of the node")
	}
	if code := up.stop(t); code != 0 {
		t.Errorf("dubbo up exited %d after Ctrl-C, want 0", code)
	}
}

package e2e

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// greetJSON posts {"name":name} to greet.GreetService/Greet over
// HTTP/1.1, as curl does, and returns the status and body.
func greetJSON(addr, name string) (int, string, error) {
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Post("http://"+addr+"/greet.GreetService/Greet", "application/json", strings.NewReader(fmt.Sprintf(`{"name":%q}`, name)))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b)), err
}

// TestRunTripleProvider runs the provider role serving Triple only, as the
// README says (`dubbo run --role=provider --set protocol.name=tri ...`),
// with the protobuf example plugin: `dubbo call` by url prints the
// greeting (a server stream one line per message), and a plain HTTP/1.1
// POST of JSON answers 200 with it, for the protobuf service and for the
// Java-interface Greeter served beside it.
func TestRunTripleProvider(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	node := startNode(t, "dubbo run --role=provider", dir, "run", "--role=provider",
		"--set", "registry.address=", "--set", "monitor.enabled=false", "--set", "qos.listen=",
		"--set", "protocol.name=tri", "--set", "protocol.host=127.0.0.1", "--set", fmt.Sprintf("protocol.port=%d", p.tri),
		"--set", fmt.Sprintf("provider.plugins=[%q, %q]", binary("greet"), binary("greeter")))
	url := "tri://" + p.triAddr(0)
	var r result
	if _, ok := waitFor(20*time.Second, func() bool {
		r = dubbo(t, dir, "call", "--url", url, "greet.GreetService", "Greet", `{"name":"x"}`)
		return r.code == 0 || node.exited()
	}); !ok || strings.TrimSpace(r.stdout) != `{"greeting":"Hello, x"}` {
		t.Fatalf("dubbo call --url %s greet.GreetService Greet: exit %d, stdout %q, stderr %q", url, r.code, r.stdout, r.stderr)
	}
	if out := node.stdout.String(); !strings.Contains(out, "provider   "+url+"   plugins") {
		t.Errorf("dubbo run printed %q, want the provider's tri:// address", out)
	}
	r = dubbo(t, dir, "call", "--url", url, "greet.GreetService", "GreetServerStream", `{"name":"x","count":2}`)
	if got := strings.TrimSpace(r.stdout); r.code != 0 || got != "{\"greeting\":\"Hello, x #1\"}\n{\"greeting\":\"Hello, x #2\"}" {
		t.Errorf("GreetServerStream: exit %d, stdout %q, stderr %q", r.code, got, r.stderr)
	}
	if code, body, err := greetJSON(p.triAddr(0), "x"); err != nil || code != 200 || body != `{"greeting":"Hello, x"}` {
		t.Errorf("POST /greet.GreetService/Greet: %d %s %v", code, body, err)
	}
	// The Java-interface Greeter too, as Java Dubbo 3.3's documentation
	// calls one with curl: a JSON array of the arguments.
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Post("http://"+p.triAddr(0)+"/org.example.Greeter/sayHello/", "application/json", strings.NewReader(`["world"]`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != `"Hello, world"` {
		t.Errorf("POST /org.example.Greeter/sayHello/ [\"world\"]: %d %s", resp.StatusCode, body)
	}
	if code := node.stop(t); code != 0 {
		t.Errorf("dubbo run exited %d on SIGTERM", code)
	}
}

// TestUpTriple runs dubbo up as the shipped dubbo.toml does, with two
// replicas serving the protobuf example over Triple beside Greeter over
// dubbo: `dubbo call greet.GreetService Greet` through the registry prints
// the greeting, each replica's Triple port answers JSON over HTTP/1.1,
// and Greeter still answers over dubbo.
func TestUpTriple(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 2)
	cfg := writeConfig(t, dir, p, setup{
		replicas:        2,
		providerPlugins: []string{"greeter", "greet"},
		tri:             true,
		extra:           "\n[[provider.services]]\ninterface = \"org.example.Greeter\"\nprotocols = [\"dubbo\"]\n",
	})
	up := startNode(t, "dubbo up", dir, "up", "-c", cfg)
	waitServing(t, dir, p, 2)
	var r result
	if _, ok := waitFor(20*time.Second, func() bool {
		r = dubbo(t, dir, "call", "--registry", p.registryURL(), "greet.GreetService", "Greet", `{"name":"x"}`)
		return r.code == 0 || up.exited()
	}); !ok || strings.TrimSpace(r.stdout) != `{"greeting":"Hello, x"}` {
		t.Fatalf("dubbo call greet.GreetService Greet: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	for i := range 2 {
		if code, body, err := greetJSON(p.triAddr(i), "x"); err != nil || code != 200 || body != `{"greeting":"Hello, x"}` {
			t.Errorf("replica %d: POST /greet.GreetService/Greet: %d %s %v", i+1, code, body, err)
		}
		if !strings.Contains(up.stdout.String(), "tri://"+p.triAddr(i)) {
			t.Errorf("dubbo up did not print the Triple address of replica %d:\n%s", i+1, up.stdout.String())
		}
	}
	if r := call(t, dir, p, "org.example.Greeter", "sayHello", `"world"`); r.code != 0 || strings.TrimSpace(r.stdout) != `"Hello, world"` {
		t.Errorf("Greeter over dubbo: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if code := up.stop(t); code != 0 {
		t.Errorf("dubbo up exited %d after Ctrl-C", code)
	}
}

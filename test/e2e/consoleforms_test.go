package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// fill sets fields of the page as a person does, each firing input and
// change (the console's script listens to them): pairs of a field's name
// (name@value for one checkbox of several) and its value ("on" and "off"
// for a checkbox).
func fill(t *testing.T, ctx context.Context, fields ...string) {
	t.Helper()
	var pairs [][2]string
	for i := 0; i+1 < len(fields); i += 2 {
		pairs = append(pairs, [2]string{fields[i], fields[i+1]})
	}
	js, _ := json.Marshal(pairs)
	msg, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		for (const [spec, v] of `+string(js)+`) {
			const [name, value] = spec.split("@");
			const el = document.querySelector(value ? '[name="' + name + '"][value="' + value + '"]' : '[name="' + name + '"]');
			if (!el) return "no field " + spec;
			if (el.type === "checkbox") el.checked = v === "on"; else el.value = v;
			el.dispatchEvent(new Event("input", {bubbles: true}));
			el.dispatchEvent(new Event("change", {bubbles: true}));
		}
		return "";
	})()`))
	if err != nil || msg != "" {
		t.Fatalf("fill %v: %v %s", fields, err, msg)
	}
}

// formsEnv is dubbo up with two Greeter providers, and a consumer of the
// test's that calls any method with attachments and says who answered.
type formsEnv struct {
	p    ports
	a, b string
	cons *consumer.Consumer
}

func (e formsEnv) call(method string, attachments ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	inv := &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Method: method,
		ParamTypes: []string{"java.lang.String"}, Args: []any{"browser"}}
	if method == "sleep" {
		inv.ParamTypes, inv.Args = []string{"int"}, []any{int32(300)}
	}
	for i := 0; i+1 < len(attachments); i += 2 {
		inv.SetAttachment(attachments[i], attachments[i+1])
	}
	res, err := e.cons.Invoke(ctx, inv)
	if err != nil {
		return "error: " + rpc.ErrorKind(err), err
	}
	return res.Provider, nil
}

// servedBy makes n sayHello calls (or sleep calls) and counts who answered.
func (e formsEnv) servedBy(n int, method string, attachments ...string) map[string]int {
	got := map[string]int{}
	for i := 0; i < n; i++ {
		who, _ := e.call(method, attachments...)
		got[who]++
	}
	return got
}

// TestConsoleFormsInBrowser fills each governance form of the console in
// real headless Chromium, as a person does: the page's script writes the
// rule's YAML beside the fields as they are filled (and the fields from
// the YAML when it is edited); Save stores it; the rule is listed on the
// rules page; and real calls follow it.
func TestConsoleFormsInBrowser(t *testing.T) {
	ctx := newBrowser(t)
	dir := t.TempDir()
	p := freePorts(t, 2)
	cfg := writeConfig(t, dir, p, setup{replicas: 2, providerPlugins: []string{"greeter"},
		extra: "\n[[provider.services]]\ninterface = \"org.example.Greeter\"\nversion = \"1.0.0\"\nwarmup = \"0s\"\n"})
	startNode(t, "dubbo up", dir, "up", "-c", cfg)
	waitServing(t, dir, p, 2)
	cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := consumer.New(cctx, consumer.Config{Application: "e2e-browser", Registry: p.registryURL(),
		References: []consumer.ReferenceConfig{{Interface: "org.example.Greeter", Version: "1.0.0"}}},
		consumer.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cons.Close() })
	if err := cons.Start(cctx); err != nil {
		t.Fatal(err)
	}
	e := formsEnv{p: p, a: p.providerAddr(0), b: p.providerAddr(1), cons: cons}
	shots := screenshotDir(t)
	svc := "org.example.Greeter:1.0.0:"
	portA := e.a[strings.LastIndex(e.a, ":")+1:]
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	// The consumer's host, as the service page lists it.
	var consumerHost string
	waitUntil(t, "the test's consumer in the console", func() bool {
		resp, err := http.Get(p.consoleURL("/api/v1/services/org.example.Greeter/consumers"))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var cs []struct{ Address, Application string }
		if json.NewDecoder(resp.Body).Decode(&cs) != nil {
			return false
		}
		for _, c := range cs {
			if c.Application == "e2e-browser" {
				consumerHost = c.Address
			}
		}
		return consumerHost != ""
	})

	forms := []struct {
		form, key string
		// first are set before fields, and the page synced (the
		// condition builder's version changes its fields).
		first, fields []string
		yaml          []string // what the YAML box shows once synced
		kind          string   // the rule listed
		moved         func() bool
		shot          string
	}{
		{form: "weight", key: svc, fields: []string{"w.0.weight", "0", "w.0.addresses", e.b},
			yaml: []string{"weight: 0", e.b, "type: weight"}, kind: "override",
			moved: func() bool { return e.servedBy(10, "sayHello")[e.a] == 10 }, shot: "form-weight.png"},
		{form: "balancing", key: svc, fields: []string{"b.0.method", "sayHello", "b.0.strategy", "roundrobin"},
			yaml: []string{"sayHello.loadbalance: roundrobin", "type: balancing"}, kind: "override",
			moved: func() bool {
				last := ""
				for i := 0; i < 10; i++ {
					who, _ := e.call("sayHello")
					if who == last {
						return false
					}
					last = who
				}
				return true
			}},
		{form: "timeout", key: svc, fields: []string{"t.0.method", "sleep", "t.0.timeout", "100", "t.0.retries", "0"},
			yaml: []string{"sleep.timeout: 100", "sleep.retries: 0"}, kind: "override",
			moved: func() bool { who, _ := e.call("sleep"); return who == "error: timeout" }},
		{form: "mock", key: svc, fields: []string{"m.0.method", "sayHello", "m.0.mode", "force", "m.0.action", "return", "m.0.value", `"mocked"`},
			yaml: []string{`sayHello.mock: force:return "mocked"`}, kind: "override",
			moved: func() bool { return e.servedBy(5, "sayHello")["mock"] == 5 }, shot: "form-mock.png"},
		{form: "access", key: svc, fields: []string{"a.blacklist", consumerHost},
			yaml: []string{"host = " + consumerHost + " =>"}, kind: "condition",
			moved: func() bool { return e.servedBy(5, "sayHello")["error: no_provider"] == 5 }},
		{form: "tag", key: "e2e", fields: []string{"enabled", "on", "tag.0.name", "gray", "tag.0.pick@" + e.a, "on"},
			yaml: []string{"name: gray", e.a}, kind: "tag",
			moved: func() bool {
				return e.servedBy(10, "sayHello", "dubbo.tag", "gray")[e.a] == 10 && e.servedBy(10, "sayHello")[e.b] == 10
			}, shot: "form-tag.png"},
		{form: "condition", key: svc, first: []string{"configVersion", "v3.1"},
			fields: []string{"enabled", "on", "c.0.w.0.key", "method", "c.0.w.0.values", "sayHello",
				"c.0.t.0.0.key", "port", "c.0.t.0.0.values", portA, "c.0.t.0.weight", "100"},
			yaml: []string{"configVersion: v3.1", "match: method = sayHello", "match: port = " + portA, "weight: 100"}, kind: "condition",
			moved: func() bool { return e.servedBy(10, "sayHello")[e.a] == 10 }, shot: "form-condition.png"},
	}
	for _, f := range forms {
		t.Run(f.form, func(t *testing.T) {
			run("open the form", chromedp.Navigate(p.consoleURL("/forms/"+f.form+"?key="+f.key)), chromedp.WaitVisible(chromedp.CSS("#fields")))
			if len(f.first) > 0 {
				fill(t, ctx, f.first...)
				poll(t, ctx, "the fields of "+f.first[1], 10*time.Second, `!!document.querySelector('[name="c.0.t.0.weight"]')`)
			}
			fill(t, ctx, f.fields...)
			for _, w := range f.yaml {
				poll(t, ctx, "the YAML with "+w, 10*time.Second, fmt.Sprintf(`document.getElementById("yaml").value.includes(%q)`, w))
			}
			if f.shot != "" {
				shot(t, ctx, shots, f.shot)
			}
			run("save", chromedp.Click(chromedp.CSS("#save")), chromedp.WaitVisible(chromedp.CSS("#form-saved")))
			run("the rules page", chromedp.Navigate(p.consoleURL("/rules")),
				chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#rules tr[data-kind=%q][data-key=%q]`, f.kind, f.key))))
			waitUntil(t, "calls following the "+f.form+" form", f.moved)
			deleteRule(t, p, "/api/v1/rules/"+f.kind+"/"+f.key)
		})
	}

	// The YAML edited by hand: the fields follow it, and Save stores it.
	run("open the weight form", chromedp.Navigate(p.consoleURL("/forms/weight?key="+svc)), chromedp.WaitVisible(chromedp.CSS("#fields")))
	fill(t, ctx, "yaml", "configVersion: v3.0\nconfigs:\n  - type: weight\n    side: provider\n    addresses: [\""+e.a+"\"]\n    parameters: {weight: 0}\n")
	poll(t, ctx, "the fields from the YAML", 10*time.Second,
		fmt.Sprintf(`document.querySelector('[name="w.0.weight"]').value === "0" && document.querySelector('[name="w.0.addresses"]').value === %q`, e.a))
	run("save the YAML", chromedp.Click(chromedp.CSS("#save")), chromedp.WaitVisible(chromedp.CSS("#form-saved")))
	waitUntil(t, "every call on "+e.b, func() bool { return e.servedBy(10, "sayHello")[e.b] == 10 })
	// Deleted, then restored from its history with a click.
	deleteRule(t, p, "/api/v1/rules/override/"+svc)
	run("the deleted rule's history", chromedp.Navigate(p.consoleURL("/rules/override/"+svc)), chromedp.WaitVisible(chromedp.CSS("#rule-missing")))
	shot(t, ctx, shots, "rule-history.png")
	run("restore", chromedp.Click(chromedp.CSS("#history tr[data-change] button.restore")), chromedp.WaitVisible(chromedp.CSS("#rule-restored")))
	waitUntil(t, "every call on "+e.b+" again", func() bool { return e.servedBy(10, "sayHello")[e.b] == 10 })
	deleteRule(t, p, "/api/v1/rules/override/"+svc)

	// The test page: sayHello called on one provider picked, answered by
	// it, with how long it took.
	run("the test page", chromedp.Navigate(p.consoleURL("/services/org.example.Greeter/test?method=sayHello")), chromedp.WaitVisible(chromedp.CSS("#args")))
	fill(t, ctx, "args", `["chromium"]`, "provider", e.b)
	run("call", chromedp.Click(chromedp.CSS("#call")), chromedp.WaitVisible(chromedp.CSS("#test-result")))
	if who, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#answered-by"))); who != e.b {
		t.Fatalf("answered by %q, want %s", who, e.b)
	}
	if out, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#test-result"))); out != `"Hello, chromium"` {
		t.Fatalf("result %q", out)
	}
	shot(t, ctx, shots, "test-page.png")
}

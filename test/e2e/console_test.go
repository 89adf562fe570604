package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/dubbo-lab/dubbo/internal/testkit/need"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// chromiumPath is Debian's Chromium; without it the browser test skips on
// a laptop and fails in CI (CI=true), as the other real-component tests do.
func chromiumPath(t *testing.T) string {
	const p = "/usr/bin/chromium"
	if _, err := os.Stat(p); err != nil {
		need.Missing(t, "Chromium is not installed at %s (apt-get install chromium)", p)
	}
	return p
}

// screenshotDir is where the browser test saves its screenshots: the
// directory in CONSOLE_SCREENSHOTS, else test/e2e/testdata/screenshots
// (ignored by git).
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("CONSOLE_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join("testdata", "screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	return abs
}

// newBrowser starts headless Chromium with the flags TESTING.md gives
// (no sandbox as root, nothing that reaches the internet) and a fresh
// profile.
func newBrowser(t *testing.T) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 5*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	return ctx
}

func shot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", p)
}

// TestConsoleBrowser drives the console of a running `dubbo up` with real
// headless Chromium, as a person would: it sees Greeter with both
// providers and a chart with data (the example consumer plugin calls
// Greeter a few times a second, and every node reports each second),
// sayHello in the service page's method table with its calls and p99, the
// example consumer's application calling Greeter on the dependencies map,
// and Greeter with its rate among the overview's busiest services; then it
// writes a condition rule through the rule form that sends every call to
// one provider (real calls of another consumer then all reach it), deletes
// it, and disables the other provider with its button (it then gets no
// calls).
func TestConsoleBrowser(t *testing.T) {
	ctx := newBrowser(t)
	dir := t.TempDir()
	p := freePorts(t, 2)
	cfg := writeConfig(t, dir, p, setup{replicas: 2, providerPlugins: []string{"greeter"},
		consumerPlugins: []string{"greeter-caller"}, references: []string{"org.example.Greeter"},
		extra: "\n[monitor]\ninterval = \"1s\"\n"})
	up := startNode(t, "dubbo up", dir, "up", "-c", cfg)
	waitServing(t, dir, p, 2)
	if _, ok := waitFor(20*time.Second, func() bool {
		return strings.Contains(up.stdout.String(), "console    "+p.consoleURL("/")) || up.exited()
	}); !ok || up.exited() {
		t.Fatalf("dubbo up did not print the console's address %s", p.consoleURL("/"))
	}
	browse(t, ctx, upSystem(t, p), screenshotDir(t))
}

// system is what the browser scenario needs of a running environment.
type system struct {
	ConsoleURL string
	Providers  []string // Greeter providers' host:port
	// Served counts, per provider, the calls Call made that it answered.
	Served func() map[string]int64
	// Call makes one real sayHello call through a consumer of the test's.
	Call func(ctx context.Context, arg string) error
}

// upSystem is dubbo up's environment on p, called through a consumer in
// the test process, which follows the registry's rules like any other.
func upSystem(t *testing.T, p ports) system {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := consumer.New(ctx, consumer.Config{Application: "e2e-browser", Registry: p.registryURL(),
		References: []consumer.ReferenceConfig{{Interface: "org.example.Greeter", Version: "1.0.0"}}},
		consumer.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cons.Close() })
	if err := cons.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	served := map[string]int64{}
	return system{
		ConsoleURL: strings.TrimSuffix(p.consoleURL("/"), "/"),
		Providers:  []string{p.providerAddr(0), p.providerAddr(1)},
		Served: func() map[string]int64 {
			mu.Lock()
			defer mu.Unlock()
			return maps.Clone(served)
		},
		Call: func(ctx context.Context, arg string) error {
			res, err := cons.Invoke(ctx, &rpc.Invocation{Service: "org.example.Greeter", Version: "1.0.0", Method: "sayHello",
				ParamTypes: []string{"java.lang.String"}, Args: []any{arg}})
			if err != nil {
				return err
			}
			mu.Lock()
			served[res.Provider]++
			mu.Unlock()
			return nil
		},
	}
}

// poll waits until the page's expression js is true, for up to timeout.
func poll(t *testing.T, ctx context.Context, what string, timeout time.Duration, js string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](js, chromedp.WithPollingInterval(200*time.Millisecond),
		chromedp.WithPollingTimeout(timeout))); err != nil {
		text, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText"))
		t.Fatalf("no %s after %v: %v\n%s", what, timeout, err, text)
	}
}

// waitUntil polls cond for up to 20 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if _, ok := waitFor(20*time.Second, cond); !ok {
		t.Fatalf("after 20s, still not %s", what)
	}
}

// browse is the browser scenario.
func browse(t *testing.T, ctx context.Context, sys system, shots string) {
	a, b := sys.Providers[0], sys.Providers[1]
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// Overview.
	run("overview", chromedp.Navigate(sys.ConsoleURL+"/"), chromedp.WaitVisible(chromedp.CSS("#count-providers")))
	// Greeter's two providers and the monitor's MonitorService (Dubbo's
	// two names of it).
	if n, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#count-providers"))); n != "4" {
		t.Fatalf("overview counts %q providers, want 4 (2 Greeter, 2 MonitorService)", n)
	}

	// The services page lists Greeter; its page shows both providers.
	run("services", chromedp.Navigate(sys.ConsoleURL+"/services"), chromedp.WaitVisible(chromedp.CSS("#services")))
	run("open Greeter", chromedp.Click(chromedp.CSS(`#services tr[data-interface="org.example.Greeter"] a`)),
		chromedp.WaitVisible(chromedp.CSS("#providers")))
	for _, p := range []string{a, b} {
		run("provider "+p, chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#providers tr[data-address="%s"]`, p))))
	}
	// A chart with data: the page refreshes itself until the monitor's
	// numbers arrive.
	poll(t, ctx, "chart with data", 90*time.Second,
		`(() => { const s = document.querySelector('#charts svg.chart'); return !!s && Number(s.getAttribute('data-total')) > 0; })()`)
	run("chart lines", chromedp.WaitVisible(chromedp.CSS("#charts polyline, #charts circle")))
	// sayHello in the method table, with its calls and its p99 (every
	// node of dubbo up sends a histogram with its statistics).
	poll(t, ctx, "sayHello with calls and a p99 in the method table", 60*time.Second,
		`(() => { const r = document.querySelector('#method-stats tr[data-method="sayHello"]');
			return !!r && Number(r.querySelector('td.calls').textContent) > 0 && /^[0-9.]+$/.test(r.querySelector('td.p99').textContent.trim()); })()`)
	shot(t, ctx, shots, "service.png")

	// The dependencies map: the example consumer's application (the
	// config's, e2e) calls Greeter, the edge labelled with its rate.
	run("dependencies", chromedp.Navigate(sys.ConsoleURL+"/dependencies"), chromedp.WaitVisible(chromedp.CSS("#edges")))
	poll(t, ctx, "the e2e -> org.example.Greeter edge with its calls/s", 60*time.Second,
		`(() => { const e = document.querySelector('svg.depmap g.edge[data-from="e2e"][data-to="org.example.Greeter"]');
			return !!e && /\/s/.test(e.getAttribute('data-label')); })()`)
	shot(t, ctx, shots, "dependencies.png")

	// The overview ranks the services by the last five complete minutes:
	// Greeter is there with its rate once a whole minute of reports is in.
	run("overview again", chromedp.Navigate(sys.ConsoleURL+"/"), chromedp.WaitVisible(chromedp.CSS("#count-providers")))
	poll(t, ctx, "Greeter with its calls/s among the busiest services", 150*time.Second,
		`(() => { const c = document.querySelector('#busiest tr[data-interface="org.example.Greeter"] td.calls-per-second');
			return !!c && Number(c.textContent) > 0; })()`)
	shot(t, ctx, shots, "overview.png")
	run("instances", chromedp.Navigate(sys.ConsoleURL+"/instances"), chromedp.WaitVisible(chromedp.CSS("#instances")))
	shot(t, ctx, shots, "instances.png")

	// A condition rule through the page's form: every call to a.
	port := a[strings.LastIndex(a, ":")+1:]
	rule := "scope: service\nkey: org.example.Greeter\nenabled: true\nforce: true\nruntime: true\npriority: 0\nconditions:\n  - \"=> port = " + port + "\"\n"
	run("open the rule form", chromedp.Navigate(sys.ConsoleURL+"/services/org.example.Greeter"),
		chromedp.Click(chromedp.CSS("#add-condition-rule")), chromedp.WaitVisible(chromedp.CSS("#yaml")))
	if key, _ := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#key"))); key != "org.example.Greeter:1.0.0:" {
		t.Fatalf("rule form key %q", key)
	}
	run("fill the rule", chromedp.SetValue(chromedp.CSS("#yaml"), rule))
	run("save the rule", chromedp.Click(chromedp.CSS("#save")))
	waitUntil(t, "the page after saving", func() bool {
		loc, err := chromedp.Run(ctx, chromedp.Location())
		return err == nil && !strings.Contains(loc, "/rules/new")
	})
	run("saved page", chromedp.WaitVisible(chromedp.CSS("h1")))
	if loc, _ := chromedp.Run(ctx, chromedp.Location()); !strings.Contains(loc, "saved=1") {
		msg, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.body.innerText"))
		t.Fatalf("rule not saved: %s\n%s", loc, msg)
	}
	waitUntil(t, "every call on "+a, func() bool {
		before := sys.Served()
		for i := 0; i < 20; i++ {
			if err := sys.Call(context.Background(), "browser"); err != nil {
				t.Fatal(err)
			}
		}
		after := sys.Served()
		return after[a]-before[a] >= 20 && after[b] == before[b]
	})

	// Delete it with the rule page's button; traffic spreads again.
	run("delete the rule", chromedp.Navigate(sys.ConsoleURL+"/rules/condition/org.example.Greeter:1.0.0:"),
		chromedp.Click(chromedp.CSS(`#rule-form button[value="delete"]`)), chromedp.WaitVisible(chromedp.CSS("#rules")))
	waitUntil(t, "calls on "+b+" again", func() bool {
		before := sys.Served()
		for i := 0; i < 20; i++ {
			_ = sys.Call(context.Background(), "browser")
		}
		return sys.Served()[b] > before[b]
	})

	// Disable b with its button: it gets no calls.
	run("disable "+b, chromedp.Navigate(sys.ConsoleURL+"/services/org.example.Greeter"),
		chromedp.Click(chromedp.CSS(fmt.Sprintf(`#providers tr[data-address="%s"] button.disable`, b))),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#providers tr[data-address="%s"] button.enable`, b))))
	waitUntil(t, b+" without calls", func() bool {
		before := sys.Served()
		for i := 0; i < 20; i++ {
			if err := sys.Call(context.Background(), "browser"); err != nil {
				t.Fatal(err)
			}
		}
		after := sys.Served()
		return after[b] == before[b] && after[a]-before[a] >= 20
	})
	shot(t, ctx, shots, "service-disabled.png")
	// And back.
	run("enable "+b, chromedp.Click(chromedp.CSS(fmt.Sprintf(`#providers tr[data-address="%s"] button.enable`, b))),
		chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`#providers tr[data-address="%s"] button.disable`, b))))
	waitUntil(t, b+" serving again", func() bool {
		before := sys.Served()
		for i := 0; i < 20; i++ {
			_ = sys.Call(context.Background(), "browser")
		}
		return sys.Served()[b] > before[b]
	})
}

package e2e

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// browser is an HTTP client that keeps cookies and does not follow
// redirects, as the console's forms are driven from a browser.
type browser struct {
	t *testing.T
	c *http.Client
	p ports
}

func newBrowserClient(t *testing.T, p ports) *browser {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &browser{t: t, p: p, c: &http.Client{Jar: jar, Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) do(method, path string, form url.Values) (int, string, http.Header) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.p.consoleURL(path), body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out), resp.Header
}

var (
	formCSRF     = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)
	formRevision = regexp.MustCompile(`name="revision" value="([^"]*)"`)
	formYAML     = regexp.MustCompile(`(?s)<textarea name="yaml" id="yaml"[^>]*>(.*?)</textarea>`)
)

// saveForm opens the console's form of key, fills it with fields (name,
// value, ...) and saves it, as a person does in a browser: the page's CSRF
// token and the rule's revision go with the fields.
func (b *browser) saveForm(form, key string, fields ...string) {
	b.t.Helper()
	st, page, _ := b.do("GET", "/forms/"+form+"?key="+url.QueryEscape(key), nil)
	csrf, rev, y := formCSRF.FindStringSubmatch(page), formRevision.FindStringSubmatch(page), formYAML.FindStringSubmatch(page)
	if st != 200 || csrf == nil || rev == nil || y == nil {
		b.t.Fatalf("form %s of %s: %d\n%s", form, key, st, page)
	}
	v := url.Values{"csrf": {csrf[1]}, "key": {key}, "revision": {rev[1]}, "yaml": {html.UnescapeString(y[1])}, "source": {"form"}, "action": {"save"}}
	for i := 0; i+1 < len(fields); i += 2 {
		v.Add(fields[i], fields[i+1])
	}
	st, page, hdr := b.do("POST", "/forms/"+form, v)
	if st != http.StatusSeeOther {
		b.t.Fatalf("save form %s of %s: %d\n%s", form, key, st, page)
	}
	b.t.Logf("form %s of %s saved: %s", form, key, hdr.Get("Location"))
}

// TestGrayReleaseThroughForms is a gray release done entirely through the
// console's forms, driven over HTTP as a browser drives them, and checked
// with real traffic from `dubbo bench`:
//
//  1. a new provider joins, and the weight form gives it 10% of the calls
//     (old 90, new 10);
//  2. the tag form of the provider application puts the new provider alone
//     in tag gray (force): the calls of the consumer application that
//     sends that tag (shop) all reach it, those of another (web) none;
//  3. the mock form makes sayHello answer "fallback" after a failure, and
//     the new provider is killed with -9 while shop calls: no call fails;
//  4. each form emptied and saved: no rule is left, and every call goes to
//     the old provider.
func TestGrayReleaseThroughForms(t *testing.T) {
	dir := t.TempDir()
	p := freePorts(t, 1)
	noWarmup := "\n[[provider.services]]\ninterface = \"org.example.Greeter\"\nversion = \"1.0.0\"\nwarmup = \"0s\"\n"
	cfg := writeConfig(t, dir, p, setup{providerPlugins: []string{"greeter"}, extra: noWarmup})
	startNode(t, "dubbo up", dir, "up", "-c", cfg)
	waitServing(t, dir, p, 1)
	old := p.providerAddr(0)
	fresh := startGreeterProviderWith(t, "new provider", p, noWarmup)
	benchAs := func(app string, n int, flags ...string) benchSummary {
		t.Helper()
		return bench(t, dir, append([]string{"--registry", p.registryURL(), "--set", "application.name=" + app, "-n", fmt.Sprint(n), "-c", "4"}, flags...)...)
	}
	if _, ok := waitFor(20*time.Second, func() bool { return benchAs("web", 40).ByProvider[fresh.addr] > 0 }); !ok {
		t.Fatalf("the new provider %s takes no calls", fresh.addr)
	}
	b := newBrowserClient(t, p)
	svc := "org.example.Greeter:1.0.0:"

	// 1. 10% by weight.
	b.saveForm("weight", svc, "w.0.weight", "90", "w.0.addresses", old, "w.1.weight", "10", "w.1.addresses", fresh.addr)
	var s benchSummary
	if _, ok := waitFor(20*time.Second, func() bool {
		s = benchAs("web", 2000)
		share := float64(s.ByProvider[fresh.addr]) / float64(s.Calls)
		return s.Errors == 0 && share > 0.07 && share < 0.13
	}); !ok {
		t.Fatalf("the new provider's share is not 10%%: %v", s.ByProvider)
	}
	t.Logf("weight 90/10: of %d calls, new %d (%.1f%%), old %d", s.Calls, s.ByProvider[fresh.addr],
		100*float64(s.ByProvider[fresh.addr])/float64(s.Calls), s.ByProvider[old])

	// 2. Tag gray for the new provider alone: shop's gray calls go there.
	b.saveForm("tag", "e2e", "enabled", "true", "force", "true", "tag.0.name", "gray", "tag.0.pick", fresh.addr)
	var shop, web benchSummary
	if _, ok := waitFor(20*time.Second, func() bool {
		shop, web = benchAs("shop", 200, "--tag", "gray"), benchAs("web", 200)
		return shop.ByProvider[fresh.addr] == 200 && web.ByProvider[old] == 200
	}); !ok {
		t.Fatalf("tag gray: shop's calls %v, web's %v; want shop's on %s, web's on %s", shop.ByProvider, web.ByProvider, fresh.addr, old)
	}
	t.Logf("tag gray: shop %v, web %v", shop.ByProvider, web.ByProvider)

	// 3. Mock after a failure; the new provider killed with -9 under load.
	b.saveForm("mock", svc, "m.0.method", "sayHello", "m.0.mode", "fail", "m.0.action", "return", "m.0.value", `"fallback"`)
	time.Sleep(time.Second) // the running consumers read the rule (each bench is a new one and reads it at start)
	var (
		wg       sync.WaitGroup
		underRun result
		runErr   error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		underRun, runErr = runDubbo(dir, "bench", "--registry", p.registryURL(), "--set", "application.name=shop", "--tag", "gray",
			"-d", "6s", "-c", "4", "--version", "1.0.0", "org.example.Greeter", "sayHello", `"world"`)
	}()
	time.Sleep(2 * time.Second)
	kill9(t, fresh.node)
	wg.Wait()
	if runErr != nil {
		t.Fatal(runErr)
	}
	s = benchResult(t, underRun)
	if s.Errors != 0 || s.ByProvider["mock"] == 0 || s.ByProvider[fresh.addr] == 0 {
		t.Fatalf("shop's calls across the kill: %d failed of %d, by %v; want none failed, some by %s then by the mock",
			s.Errors, s.Calls, s.ByProvider, fresh.addr)
	}
	t.Logf("kill -9 under load: %d calls, 0 failed: %d by the new provider, then %d by the mock", s.Calls, s.ByProvider[fresh.addr], s.ByProvider["mock"])

	// 4. Everything back: each form emptied.
	b.saveForm("mock", svc)
	b.saveForm("tag", "e2e", "enabled", "true")
	b.saveForm("weight", svc)
	if st, body, _ := b.do("GET", "/api/v1/rules", nil); st != 200 || body != "[]\n" {
		t.Fatalf("rules left: %d %s", st, body)
	}
	if _, ok := waitFor(20*time.Second, func() bool {
		shop, web = benchAs("shop", 100, "--tag", "gray"), benchAs("web", 100)
		return shop.Errors == 0 && web.Errors == 0 && shop.ByProvider[old] == 100 && web.ByProvider[old] == 100
	}); !ok {
		t.Fatalf("after the rules went: shop %v, web %v", shop.ByProvider, web.ByProvider)
	}
	// The history of the override rule tells the story.
	_, hist, _ := b.do("GET", "/api/v1/rules/override/"+svc+"/history", nil)
	for _, action := range []string{"form weight", "form mock", "form weight: nothing left"} {
		if !strings.Contains(hist, `"action":"`+action+`"`) {
			t.Errorf("the history lacks %q: %s", action, hist)
		}
	}
}

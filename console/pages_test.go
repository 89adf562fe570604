package console_test

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// TestTestPage calls methods through the test page's form, as a person
// would: the answer, or the exception, is shown.
func TestTestPage(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	b := browserClient(t)
	page := e.ConsoleURL + "/services/" + greeter + "/test"
	_, body, _ := send(t, b, "GET", page+"?method=add", "", "")
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF token on the test page")
	}
	if !strings.Contains(body, `<textarea name="args" id="args" rows="6" spellcheck="false">[1, 1]</textarea>`) {
		t.Fatalf("no sample arguments for add:\n%s", body)
	}
	option := func(sig string) string {
		re := regexp.MustCompile(`<option value="(\d+)"[^>]*>` + regexp.QuoteMeta(sig))
		o := re.FindStringSubmatch(body)
		if o == nil {
			t.Fatalf("no method %s on the test page", sig)
		}
		return o[1]
	}
	for _, c := range []struct{ sig, args, want string }{
		{"int add(int, int)", "[2, 3]", `<pre id="test-result">5</pre>`},
		{"java.lang.String sayHello(java.lang.String)", `["page"]`, `<pre id="test-result">&#34;Hello, page&#34;</pre>`},
		{"void fail(java.lang.String)", `["boom"]`, `<b>exception</b> <code>java.lang.IllegalStateException</code>: boom`},
		{"int add(int, int)", `["x"]`, `<b>bad_request</b>`},
	} {
		form := url.Values{"csrf": {m[1]}, "method": {option(c.sig)}, "args": {c.args}}
		st, out, _ := send(t, b, "POST", page, "application/x-www-form-urlencoded", form.Encode())
		if st != 200 || !strings.Contains(out, c.want) {
			t.Errorf("%s %s: %d, want %s in\n%s", c.sig, c.args, st, c.want, out)
		}
	}
}

// TestRuleFormRefusesBadRules: a bad rule from the form is shown again
// with the problem, and nothing is stored.
func TestRuleFormRefusesBadRules(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	zkr := rulesAt(t, e)
	b := browserClient(t)
	_, body, _ := send(t, b, "GET", e.ConsoleURL+"/rules/new?kind=condition&key=org.example.Greeter:1.0.0:", "", "")
	m := csrfRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no CSRF token on the rule page")
	}
	form := url.Values{"csrf": {m[1]}, "kind": {"condition"}, "key": {"org.example.Greeter:1.0.0:"}, "action": {"save"},
		"yaml": {"scope: service\nconditions: []\n"}}
	st, out, _ := send(t, b, "POST", e.ConsoleURL+"/rules", "application/x-www-form-urlencoded", form.Encode())
	if st != 400 || !strings.Contains(out, `id="rule-error"`) || !strings.Contains(out, "no conditions") || !strings.Contains(out, "conditions: []") {
		t.Fatalf("bad rule: %d\n%s", st, out)
	}
	if _, ok, _ := zkr.GetConfig(testCtx(t), "org.example.Greeter:1.0.0:.condition-router"); ok {
		t.Fatal("a refused rule was stored")
	}
	form.Set("yaml", "conditions:\n  - \"=> host = 127.0.0.1\"\n")
	st, _, hdr := send(t, b, "POST", e.ConsoleURL+"/rules", "application/x-www-form-urlencoded", form.Encode())
	if st != 303 || hdr.Get("Location") != "/rules/condition/org.example.Greeter:1.0.0:?saved=1" {
		t.Fatalf("good rule: %d %s", st, hdr.Get("Location"))
	}
	if _, ok, _ := zkr.GetConfig(testCtx(t), "org.example.Greeter:1.0.0:.condition-router"); !ok {
		t.Fatal("the rule was not stored")
	}
}

// /services/<app> is Dubbo's path of an application's instances: the
// console sends it to the application's page; an unknown name is a 404.
func TestServicesPathOfAnApplication(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	b := browserClient(t)
	st, _, hdr := send(t, b, "GET", e.ConsoleURL+"/services/greeter-app", "", "")
	if st != 302 || hdr.Get("Location") != "/applications/greeter-app" {
		t.Fatalf("GET /services/greeter-app: %d to %q, want 302 to /applications/greeter-app", st, hdr.Get("Location"))
	}
	st, body, _ := send(t, b, "GET", e.ConsoleURL+"/applications/greeter-app", "", "")
	if st != 200 || !strings.Contains(body, "greeter-app") {
		t.Fatalf("GET /applications/greeter-app: %d", st)
	}
	if st, _, _ := send(t, b, "GET", e.ConsoleURL+"/services/no-such-app", "", ""); st != 404 {
		t.Errorf("GET /services/no-such-app: %d, want 404", st)
	}
}

package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/internal/testkit/greetgrpc"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	dubbourl "github.com/dubbo-lab/dubbo/node/url"
)

// testForm is the test page's form, opened as a browser does.
func testForm(t *testing.T, e *env, b *http.Client, iface, query string) (csrf, body string) {
	t.Helper()
	st, body, _ := send(t, b, "GET", e.ConsoleURL+"/services/"+iface+"/test"+query, "", "")
	m := csrfRE.FindStringSubmatch(body)
	if st != 200 || m == nil {
		t.Fatalf("test page of %s: %d, no CSRF token\n%s", iface, st, body)
	}
	return m[1], body
}

// methodIndex is the form's value of the method whose signature is sig.
func methodIndex(t *testing.T, body, sig string) string {
	t.Helper()
	o := regexp.MustCompile(`<option value="(\d+)"[^>]*>` + regexp.QuoteMeta(sig)).FindStringSubmatch(body)
	if o == nil {
		t.Fatalf("no method %s on the test page", sig)
	}
	return o[1]
}

// TestTestPage calls methods through the test page's form, as a person
// would: the answer or the exception, which provider answered and how
// long it took; with a timeout, a tag, attachments, and to one provider.
func TestTestPage(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	b := browserClient(t)
	page := e.ConsoleURL + "/services/" + greeter + "/test"
	csrf, body := testForm(t, e, b, greeter, "?method=add")
	if !strings.Contains(body, `<textarea name="args" id="args" rows="10" spellcheck="false">[
  0,
  0
]</textarea>`) {
		t.Fatalf("add's arguments do not start as its parameters' empty values:\n%s", body)
	}
	for _, addr := range e.Providers {
		if !strings.Contains(body, `<option value="`+addr+`" >`+addr+`</option>`) {
			t.Fatalf("provider %s not offered:\n%s", addr, body)
		}
	}
	a, bb := e.Providers[0], e.Providers[1]
	for _, c := range []struct {
		name, sig, args string
		set             url.Values
		want            []string
	}{
		{"add", "int add(int, int)", "[2, 3]", nil, []string{`<pre id="test-result">5</pre>`, `answered by <b id="answered-by">127.0.0.1:`, `in <b id="elapsed">`}},
		{"sayHello to one provider", "java.lang.String sayHello(java.lang.String)", `["page"]`, url.Values{"provider": {bb}},
			[]string{`<pre id="test-result">&#34;Hello, page&#34;</pre>`, `answered by <b id="answered-by">` + bb + `</b>`}},
		{"exception", "void fail(java.lang.String)", `["boom"]`, nil, []string{`<b>exception</b> <code>java.lang.IllegalStateException</code>: boom`}},
		{"bad argument", "int add(int, int)", `["x"]`, nil, []string{`<b>bad_request</b>`}},
		{"not an array", "int add(int, int)", `{"a": 1}`, nil, []string{`<b>bad_request</b>`, "not a JSON array"}},
		{"timeout", "java.lang.String sleep(int)", `[300]`, url.Values{"timeout": {"100"}}, []string{`<b>timeout</b>`}},
		{"bad timeout", "java.lang.String sleep(int)", `[1]`, url.Values{"timeout": {"soon"}}, []string{`<b>bad_request</b>`, "give milliseconds"}},
		{"bad attachment", "java.lang.String sleep(int)", `[1]`, url.Values{"attachments": {"novalue"}}, []string{"write key=value"}},
	} {
		form := url.Values{"csrf": {csrf}, "method": {methodIndex(t, body, c.sig)}, "args": {c.args}}
		for k, v := range c.set {
			form[k] = v
		}
		st, out, _ := send(t, b, "POST", page, "application/x-www-form-urlencoded", form.Encode())
		for _, w := range c.want {
			if st != 200 || !strings.Contains(out, w) {
				t.Errorf("%s: %d, want %s in\n%s", c.name, st, w, out)
			}
		}
	}
	// To one provider, every time; a tag rule's tag and attachments go
	// with the call.
	sayHello := methodIndex(t, body, "java.lang.String sayHello(java.lang.String)")
	for i := 0; i < 4; i++ {
		form := url.Values{"csrf": {csrf}, "method": {sayHello}, "args": {`["x"]`}, "provider": {a}}
		if _, out, _ := send(t, b, "POST", page, "application/x-www-form-urlencoded", form.Encode()); !strings.Contains(out, `answered by <b id="answered-by">`+a+`</b>`) {
			t.Fatalf("a call to %s answered by another:\n%s", a, out)
		}
	}
	if st, body, _ := do(t, "PUT", e.ConsoleURL+"/api/v1/rules/tag/greeter-app", "application/yaml", "tags:\n  - name: gray\n    addresses: [\""+bb+"\"]\n"); st != 200 {
		t.Fatalf("tag rule: %d %s", st, body)
	}
	for i := 0; i < 4; i++ {
		form := url.Values{"csrf": {csrf}, "method": {sayHello}, "args": {`["x"]`}, "tag": {"gray"}, "attachments": {"trace=1\nk = v"}}
		st, out, _ := send(t, b, "POST", page, "application/x-www-form-urlencoded", form.Encode())
		if st != 200 || !strings.Contains(out, `answered by <b id="answered-by">`+bb+`</b>`) || !strings.Contains(out, ">trace=1\nk = v</textarea>") {
			t.Fatalf("a call tagged gray not answered by %s:\n%s", bb, out)
		}
	}
}

// A POJO parameter's arguments start as its class's fields at their
// empty values, nested (two levels, as Java's getEmptyObject), from the
// service definition a Java provider publishes; the page lists each
// class's fields and their types, every level.
func TestTestPagePOJOSkeleton(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	zkr := rulesAt(t, e)
	def := &metadata.ServiceDefinition{CanonicalName: "org.example.Orders",
		Methods: []metadata.MethodDefinition{{Name: "place", ParameterTypes: []string{"org.example.Order", "int"}, ReturnType: "long"}},
		Types: []metadata.TypeDefinition{
			{Type: "org.example.Order", Properties: map[string]string{"id": "long", "items": "java.util.List<java.lang.String>", "customer": "org.example.Customer", "paid": "boolean"}},
			{Type: "org.example.Customer", Properties: map[string]string{"name": "java.lang.String", "address": "org.example.Address"}},
			{Type: "org.example.Address", Properties: map[string]string{"city": "java.lang.String"}},
			{Type: "long"}, {Type: "int"},
		}}
	if err := zkr.PublishServiceDefinition(testCtx(t), "org.example.Orders", "1.0.0", "", "orders-app", def); err != nil {
		t.Fatal(err)
	}
	registered(t, e, providerNode("org.example.Orders",
		"dubbo://127.0.0.1:20999/org.example.Orders?application=orders-app&interface=org.example.Orders&methods=place&side=provider&version=1.0.0"))
	_, body := testForm(t, e, browserClient(t), "org.example.Orders", "")
	want := `[
  {
    &#34;class&#34;: &#34;org.example.Order&#34;,
    &#34;customer&#34;: {
      &#34;address&#34;: {
        &#34;class&#34;: &#34;org.example.Address&#34;
      },
      &#34;class&#34;: &#34;org.example.Customer&#34;,
      &#34;name&#34;: &#34;&#34;
    },
    &#34;id&#34;: 0,
    &#34;items&#34;: [],
    &#34;paid&#34;: false
  },
  0
]`
	if !strings.Contains(body, want) {
		t.Fatalf("the Order argument does not start as its fields:\n%s", body)
	}
	for _, w := range []string{"<caption><code>org.example.Order</code></caption>", "<tr><th>customer</th><td><code>org.example.Customer</code>",
		"<caption><code>org.example.Address</code></caption><tr><th>city</th><td><code>java.lang.String</code>"} {
		if !strings.Contains(body, w) {
			t.Errorf("the classes do not show %s:\n%s", w, body)
		}
	}
}

// A protobuf method's argument starts as its request message, every
// field at its default; the call is made with it as protobuf JSON.
func TestTestPageProtobuf(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	srv := greetgrpc.Start(t, greetgrpc.Options{})
	reg := rulesAt(t, e)
	u := dubbourl.MustParse("tri://" + srv.Addr() + "/" + greetgrpc.Service + "?interface=" + greetgrpc.Service +
		"&application=greet-app&side=provider&methods=Greet,GreetClientStream,GreetServerStream,GreetStream")
	if err := reg.Register(testCtx(t), u); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the greet service in the console", func() bool { _, ok := e.console.Catalog().Service(greetgrpc.Service); return ok })
	b := browserClient(t)
	csrf, body := testForm(t, e, b, greetgrpc.Service, "?method=Greet")
	if !strings.Contains(body, "a JSON array of one greet.GreetRequest") || !strings.Contains(body, "[{\n  &#34;name&#34;: &#34;&#34;\n}]") {
		t.Fatalf("Greet's argument does not start as an empty GreetRequest:\n%s", body)
	}
	form := url.Values{"csrf": {csrf}, "method": {methodIndex(t, body, "Greet(?)")}, "args": {`[{"name": "proto"}]`}}
	st, out, _ := send(t, b, "POST", e.ConsoleURL+"/services/"+greetgrpc.Service+"/test", "application/x-www-form-urlencoded", form.Encode())
	if st != 200 || !strings.Contains(out, "Hello, proto") || !strings.Contains(out, `answered by <b id="answered-by">`+srv.Addr()+`</b>`) {
		t.Fatalf("Greet: %d\n%s", st, out)
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

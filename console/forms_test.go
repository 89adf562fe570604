package console_test

import (
	"encoding/json"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// formPage is a browser on one governance form: the page's CSRF token,
// the revision of the rule it was opened with, and its YAML.
type formPage struct {
	t              *testing.T
	b              *http.Client
	e              *env
	form, key      string
	csrf, revision string
	yaml           string
	body           string
}

var (
	revisionRE = regexp.MustCompile(`name="revision" value="([^"]*)"`)
	yamlRE     = regexp.MustCompile(`(?s)<textarea name="yaml" id="yaml"[^>]*>(.*?)</textarea>`)
)

// openForm opens /forms/<form>?key=<key> as a browser does.
func openForm(t *testing.T, e *env, b *http.Client, form, key string) *formPage {
	t.Helper()
	st, body, _ := send(t, b, "GET", e.ConsoleURL+"/forms/"+form+"?key="+url.QueryEscape(key), "", "")
	if st != 200 {
		t.Fatalf("GET form %s of %s: %d\n%s", form, key, st, body)
	}
	p := &formPage{t: t, b: b, e: e, form: form, key: key, body: body}
	m := csrfRE.FindStringSubmatch(body)
	v := revisionRE.FindStringSubmatch(body)
	y := yamlRE.FindStringSubmatch(body)
	if m == nil || v == nil || y == nil {
		t.Fatalf("form %s: no CSRF token, version or YAML in\n%s", form, body)
	}
	p.csrf, p.revision, p.yaml = m[1], v[1], html.UnescapeString(y[1])
	return p
}

// post sends the form with fields (name, value, ...) and action.
func (p *formPage) post(action string, hdr []string, fields ...string) (int, string, http.Header) {
	p.t.Helper()
	f := url.Values{"csrf": {p.csrf}, "key": {p.key}, "revision": {p.revision}, "yaml": {p.yaml}, "source": {"form"}, "action": {action}}
	for i := 0; i+1 < len(fields); i += 2 {
		if fields[i] == "yaml" || fields[i] == "source" || fields[i] == "key" {
			f.Set(fields[i], fields[i+1])
			continue
		}
		f.Add(fields[i], fields[i+1])
	}
	return send(p.t, p.b, "POST", p.e.ConsoleURL+"/forms/"+p.form, "application/x-www-form-urlencoded", f.Encode(), hdr...)
}

// save saves the fields and checks that the console took them.
func (p *formPage) save(fields ...string) {
	p.t.Helper()
	st, body, hdr := p.post("save", nil, fields...)
	if st != http.StatusSeeOther || !strings.HasPrefix(hdr.Get("Location"), "/forms/"+p.form+"?key=") {
		p.t.Fatalf("save %s of %s %v: %d %s\n%s", p.form, p.key, fields, st, hdr.Get("Location"), body)
	}
}

// sync asks for the YAML of the fields, or the fields of the YAML, as the
// page's script does.
func (p *formPage) sync(from string, fields ...string) (yaml, fieldsHTML, problem string) {
	p.t.Helper()
	st, body, _ := p.post("sync-"+from, []string{"Accept", "application/json"}, fields...)
	var s struct{ YAML, Fields, Error string }
	if st != 200 || json.Unmarshal([]byte(body), &s) != nil {
		p.t.Fatalf("sync from %s: %d %s", from, st, body)
	}
	return s.YAML, s.Fields, s.Error
}

// servedBy makes n calls with attachments and returns who served them.
func servedBy(t *testing.T, e *env, n int, method string, attachments ...string) map[string]int {
	t.Helper()
	got := map[string]int{}
	for i := 0; i < n; i++ {
		types, args := []string{"java.lang.String"}, []any{"x"}
		if method == "sleep" {
			types, args = []string{"int"}, []any{int32(300)}
		}
		res, err := e.Invoke(testCtx(t), method, types, args, attachments...)
		switch {
		case err != nil:
			got["error: "+rpc.ErrorKind(err)]++
		default:
			got[res.Provider]++
		}
	}
	return got
}

// Every form, filled and saved as a browser does it (CSRF token and all),
// writes its rule, and real calls follow it; emptied and saved, it leaves
// no rule and calls are back as they were.
func TestFormsMoveTraffic(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	zkr := rulesAt(t, e)
	b := browserClient(t)
	a, bb := e.Providers[0], e.Providers[1]
	svc := "org.example.Greeter:1.0.0:"
	stored := func(configKey string) string {
		doc, _, err := zkr.GetConfig(testCtx(t), configKey)
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	until := func(what string, cond func() bool) {
		t.Helper()
		waitFor(t, what, cond)
	}
	only := func(addr string, attachments ...string) func() bool {
		return func() bool { got := servedBy(t, e, 10, "sayHello", attachments...); return got[addr] == 10 }
	}

	t.Run("weight", func(t *testing.T) {
		openForm(t, e, b, "weight", svc).save("w.0.weight", "0", "w.0.addresses", bb)
		if doc := stored(svc + ".configurators"); !strings.Contains(doc, "  - addresses:\n      - "+bb+"\n    enabled: true\n    parameters:\n      weight: 0\n    side: provider\n    type: weight\n") {
			t.Fatalf("stored\n%s", doc)
		}
		until("every call on "+a, only(a))
		openForm(t, e, b, "weight", svc).save()
		if doc := stored(svc + ".configurators"); doc != "" {
			t.Fatalf("the emptied form left\n%s", doc)
		}
		until("calls on "+bb+" again", func() bool { return servedBy(t, e, 20, "sayHello")[bb] > 0 })
	})

	t.Run("load balancing", func(t *testing.T) {
		openForm(t, e, b, "balancing", svc).save("b.0.method", "sayHello", "b.0.strategy", "roundrobin")
		if doc := stored(svc + ".configurators"); !strings.Contains(doc, "sayHello.loadbalance: roundrobin\n    side: consumer\n    type: balancing") {
			t.Fatalf("stored\n%s", doc)
		}
		until("round robin: one provider after the other", func() bool {
			last := ""
			for i := 0; i < 12; i++ {
				got := servedBy(t, e, 1, "sayHello")
				for p := range got {
					if p == last {
						return false
					}
					last = p
				}
			}
			return true
		})
		openForm(t, e, b, "balancing", svc).save()
	})

	t.Run("timeout and retries", func(t *testing.T) {
		if got := servedBy(t, e, 1, "sleep"); got["error: timeout"] != 0 {
			t.Fatalf("sleep(300) timed out before any rule: %v", got)
		}
		openForm(t, e, b, "timeout", svc).save("t.0.method", "sleep", "t.0.timeout", "100", "t.0.retries", "0")
		if doc := stored(svc + ".configurators"); !strings.Contains(doc, "  - addresses:\n      - 0.0.0.0\n    enabled: true\n    parameters:\n      sleep.retries: 0\n      sleep.timeout: 100\n    side: consumer\n") {
			t.Fatalf("stored\n%s", doc)
		}
		until("sleep(300) timing out after 100 ms", func() bool {
			start := time.Now()
			got := servedBy(t, e, 1, "sleep")
			return got["error: timeout"] == 1 && time.Since(start) < 250*time.Millisecond
		})
		openForm(t, e, b, "timeout", svc).save()
	})

	t.Run("mock", func(t *testing.T) {
		openForm(t, e, b, "mock", svc).save("m.0.method", "sayHello", "m.0.mode", "force", "m.0.action", "return", "m.0.value", `"mocked"`)
		if doc := stored(svc + ".configurators"); !strings.Contains(doc, `sayHello.mock: force:return "mocked"`) {
			t.Fatalf("stored\n%s", doc)
		}
		until("sayHello answered by the mock", func() bool {
			res, err := e.Invoke(testCtx(t), "sayHello", []string{"java.lang.String"}, []any{"x"})
			return err == nil && res.Provider == "mock" && res.Value == "mocked"
		})
		openForm(t, e, b, "mock", svc).save()
		until("sayHello answered by a provider again", func() bool { return servedBy(t, e, 5, "sayHello")["mock"] == 0 })
	})

	t.Run("access control", func(t *testing.T) {
		// The consumer's host, as the service page's consumers table shows it.
		d, _ := e.console.Catalog().Service(greeter)
		host := d.Consumers[0].Address
		openForm(t, e, b, "access", svc).save("a.blacklist", host)
		if doc := stored(svc + ".condition-router"); !strings.Contains(doc, "  - host = "+host+" =>\n") {
			t.Fatalf("stored\n%s", doc)
		}
		until("this consumer host refused", func() bool { return servedBy(t, e, 5, "sayHello")["error: no_provider"] == 5 })
		openForm(t, e, b, "access", svc).save()
		until("calls served again", func() bool { return servedBy(t, e, 5, "sayHello")["error: no_provider"] == 0 })
	})

	t.Run("tag routing", func(t *testing.T) {
		p := openForm(t, e, b, "tag", "greeter-app")
		if !strings.Contains(p.body, `name="tag.0.pick" value="`+a+`"`) {
			t.Fatalf("the tag form does not offer %s:\n%s", a, p.body)
		}
		p.save("enabled", "true", "tag.0.name", "gray", "tag.0.pick", a)
		if doc := stored("greeter-app.tag-router"); !strings.Contains(doc, "tags:\n  - addresses:\n      - "+a+"\n    name: gray\n") {
			t.Fatalf("stored\n%s", doc)
		}
		until("gray calls on "+a, only(a, "dubbo.tag", "gray"))
		until("untagged calls on "+bb, only(bb))
		openForm(t, e, b, "tag", "greeter-app").save("enabled", "true")
		if doc := stored("greeter-app.tag-router"); doc != "" {
			t.Fatalf("the emptied form left\n%s", doc)
		}
	})

	t.Run("condition builder", func(t *testing.T) {
		port := a[strings.LastIndex(a, ":")+1:]
		openForm(t, e, b, "condition", svc).save("configVersion", "v3.0", "enabled", "true", "runtime", "true",
			"c.0.w.0.key", "method", "c.0.w.0.op", "=", "c.0.w.0.values", "sayHello",
			"c.0.t.0.0.key", "port", "c.0.t.0.0.op", "=", "c.0.t.0.0.values", port)
		if doc := stored(svc + ".condition-router"); !strings.Contains(doc, "conditions:\n  - method = sayHello => port = "+port+"\n") {
			t.Fatalf("stored\n%s", doc)
		}
		until("every sayHello on "+a, only(a))
		// v3.1: weighted destinations.
		openForm(t, e, b, "condition", svc).save("configVersion", "v3.1", "enabled", "true",
			"c.0.w.0.key", "method", "c.0.w.0.values", "sayHello",
			"c.0.t.0.0.key", "port", "c.0.t.0.0.values", port, "c.0.t.0.weight", "100",
			"c.0.t.1.0.key", "port", "c.0.t.1.0.op", "!=", "c.0.t.1.0.values", port, "c.0.t.1.weight", "0")
		if doc := stored(svc + ".condition-router"); !strings.Contains(doc, "configVersion: v3.1") || !strings.Contains(doc, "weight: 100") {
			t.Fatalf("stored\n%s", doc)
		}
		openForm(t, e, b, "condition", svc).save()
		until("calls on "+bb+" again", func() bool { return servedBy(t, e, 20, "sayHello")[bb] > 0 })
	})
}

// The fields and the YAML stay in step through the server, both ways; a
// form keeps what it does not own; a save over a rule changed since the
// page was opened is refused; the YAML as typed is saved when it was
// edited last.
func TestFormSync(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	zkr := rulesAt(t, e)
	b := browserClient(t)
	svc := "org.example.Greeter:1.0.0:"
	ctx := testCtx(t)
	if err := zkr.PublishConfig(ctx, svc+".configurators", newAdminRules["org.example.Greeter:1.0.0:.configurators"]); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rule in the console", func() bool { _, ok := e.console.Catalog().RuleContent(svc + ".configurators"); return ok })

	p := openForm(t, e, b, "weight", svc)
	y, fields, problem := p.sync("form", "w.0.weight", "7", "w.0.addresses", "10.0.0.1:20880")
	if problem != "" || !strings.Contains(y, "weight: 7") || !strings.Contains(y, "sayHello.mock: force:return hi") || !strings.Contains(y, "exact: shop") {
		t.Fatalf("fields to YAML: %q\n%s", problem, y)
	}
	if !strings.Contains(fields, `name="w.0.weight" value="7"`) || !strings.Contains(fields, `name="w.1.weight" value=""`) {
		t.Fatalf("fields after a sync: no spare row\n%s", fields)
	}
	_, fields, problem = p.sync("yaml", "yaml", y+"  - type: weight\n    side: provider\n    addresses: [10.0.0.2:20880]\n    parameters: {weight: 9}\n")
	if problem != "" || !strings.Contains(fields, `name="w.1.weight" value="9"`) || !strings.Contains(fields, `name="w.1.addresses" value="10.0.0.2:20880"`) {
		t.Fatalf("YAML to fields: %q\n%s", problem, fields)
	}
	if _, _, problem = p.sync("form", "w.0.weight", "lots"); !strings.Contains(problem, `"lots" is not a whole number`) {
		t.Fatalf("a bad weight: %q", problem)
	}
	if _, _, problem = p.sync("yaml", "yaml", "configs: [unclosed"); problem == "" {
		t.Fatal("bad YAML: no problem said")
	}

	// Saved: the weight item added, new Admin's item kept.
	p.save("w.0.weight", "7", "w.0.addresses", "10.0.0.1:20880")
	doc, _, _ := zkr.GetConfig(ctx, svc+".configurators")
	if !keepsAll(t, doc, newAdminRules["org.example.Greeter:1.0.0:.configurators"], "configs") || !strings.Contains(doc, "exact: shop") ||
		!strings.Contains(doc, "weight: 7") {
		t.Fatalf("stored\n%s", doc)
	}

	// A page opened before someone else's save does not overwrite it.
	stale := openForm(t, e, b, "mock", svc)
	openForm(t, e, b, "weight", svc).save("w.0.weight", "8", "w.0.addresses", "10.0.0.1:20880")
	st, body, _ := stale.post("save", nil, "m.0.value", "x")
	if st != http.StatusConflict || !strings.Contains(body, "changed since this page was opened") {
		t.Fatalf("save over a newer rule: %d\n%s", st, body)
	}
	if doc, _, _ := zkr.GetConfig(ctx, svc+".configurators"); !strings.Contains(doc, "weight: 8") || strings.Contains(doc, "return x") {
		t.Fatalf("stored\n%s", doc)
	}

	// The YAML edited last is saved as typed (and checked).
	p = openForm(t, e, b, "timeout", svc)
	p.save("source", "yaml", "yaml", "configs:\n  - side: consumer\n    parameters: {timeout: 4321}\n")
	if doc, _, _ := zkr.GetConfig(ctx, svc+".configurators"); !strings.Contains(doc, "timeout: 4321") || strings.Contains(doc, "weight") {
		t.Fatalf("stored\n%s", doc)
	}
	p = openForm(t, e, b, "timeout", svc)
	if st, body, _ := p.post("save", nil, "source", "yaml", "yaml", "configs: []\n"); st != http.StatusBadRequest || !strings.Contains(body, "no &#39;configs&#39;") {
		t.Fatalf("bad YAML saved: %d\n%s", st, body)
	}
	// Without a key, and for an unknown form.
	if st, _, _ := p.post("save", nil, "key", ""); st != 400 {
		t.Errorf("no key: %d", st)
	}
	if st, _, _ := send(t, b, "GET", e.ConsoleURL+"/forms/nope?key=a", "", ""); st != 404 {
		t.Errorf("unknown form: %d", st)
	}
}

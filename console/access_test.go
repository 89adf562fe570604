package console_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/console"
)

// Every change of a rule, through a form, the API or a button, is in the
// rule's history with who made it (the token, and the name given at login
// or in X-Dubbo-User), from where, what was done and the YAML before and
// after; a click restores an earlier version, a deleted rule included.
func TestRuleHistoryAndRestore(t *testing.T) {
	const token = "history-token"
	e := startSystem(t, envOptions{noLoad: true, token: token})
	zkr := rulesAt(t, e)
	svc := "org.example.Greeter:1.0.0:"
	api := e.ConsoleURL + "/api/v1/rules/override/" + svc
	auth := []string{"Authorization", "Bearer " + token}

	// alice logs in and saves the weight form.
	b := browserClient(t)
	_, page, _ := send(t, b, "GET", e.ConsoleURL+"/login", "", "")
	csrf := csrfRE.FindStringSubmatch(page)[1]
	login := url.Values{"csrf": {csrf}, "token": {token}, "user": {"alice"}, "next": {"/"}}
	if st, _, _ := send(t, b, "POST", e.ConsoleURL+"/login", "application/x-www-form-urlencoded", login.Encode()); st != 303 {
		t.Fatalf("login: %d", st)
	}
	openForm(t, e, b, "weight", svc).save("w.0.weight", "10", "w.0.addresses", e.Providers[0])
	first, _, _ := zkr.GetConfig(testCtx(t), svc+".configurators")

	// bob changes it through the API, then disables and deletes it.
	second := "configVersion: v3.0\nconfigs:\n  - side: consumer\n    parameters: {timeout: 2000}\n"
	if st, body, _ := do(t, "PUT", api, "application/yaml", second, append(auth, "X-Dubbo-User", "bob")...); st != 200 {
		t.Fatalf("PUT: %d %s", st, body)
	}
	stored2, _, _ := zkr.GetConfig(testCtx(t), svc+".configurators")
	if st, _, _ := do(t, "PUT", api+"/enabled", "application/json", `{"enabled": false}`, auth...); st != 200 {
		t.Fatalf("disable: %d", st)
	}
	if st, _, _ := do(t, "DELETE", api, "", "", auth...); st != 204 {
		t.Fatalf("DELETE: %d", st)
	}

	type change struct {
		ID                     int64
		Time                   int64
		Who, Client, Kind, Key string
		Action                 string
		Old, New               *string
	}
	var hs []change
	if st, body, _ := do(t, "GET", api+"/history", "", ""); st != 200 || json.Unmarshal([]byte(body), &hs) != nil {
		t.Fatalf("history: %d %s", st, body)
	}
	want := []struct {
		who, action string
		old, new    *string
	}{
		{"console.token", "delete", nil, nil},
		{"console.token", "disable", &stored2, nil},
		{"bob (console.token)", "save", &first, &stored2},
		{"alice (console.token)", "form weight", nil, &first},
	}
	if len(hs) != len(want) {
		t.Fatalf("history %+v", hs)
	}
	for i, w := range want {
		h := hs[i]
		if h.Who != w.who || h.Action != w.action || h.Client != "127.0.0.1" || h.Kind != "override" || h.Key != svc || h.Time == 0 ||
			(w.old != nil && (h.Old == nil || *h.Old != *w.old)) || (w.new != nil && (h.New == nil || *h.New != *w.new)) {
			t.Errorf("change %d: %+v, want %+v", i, h, w)
		}
	}
	if hs[3].Old != nil || hs[0].New != nil || hs[0].Old == nil || !strings.Contains(*hs[0].Old, "enabled: false") {
		t.Errorf("the first change has a document before, or the deletion one after: %+v %+v", hs[3], hs[0])
	}

	// The deleted rule's page shows its history; a click restores alice's
	// version.
	_, page, _ = send(t, b, "GET", e.ConsoleURL+"/rules/override/"+svc, "", "")
	if !strings.Contains(page, `id="rule-missing"`) || !strings.Contains(page, "alice (console.token)") || !strings.Contains(page, "form weight") {
		t.Fatalf("the deleted rule's page:\n%s", page)
	}
	form := url.Values{"csrf": {csrfRE.FindStringSubmatch(page)[1]}, "action": {"restore"}, "change": {strconv.FormatInt(hs[3].ID, 10)}}
	st, _, hdr := send(t, b, "POST", e.ConsoleURL+"/rules/override/"+svc, "application/x-www-form-urlencoded", form.Encode())
	if st != 303 || !strings.Contains(hdr.Get("Location"), "restored=") {
		t.Fatalf("restore: %d %s", st, hdr.Get("Location"))
	}
	if doc, _, _ := zkr.GetConfig(testCtx(t), svc+".configurators"); doc != first {
		t.Fatalf("restored\n%s\nwant\n%s", doc, first)
	}
	// Through the API: bob's version back; the history says so.
	st, body, _ := do(t, "POST", api+"/history/"+strconv.FormatInt(hs[2].ID, 10)+"/restore", "", "", auth...)
	if st != 200 || body != stored2 {
		t.Fatalf("API restore: %d\n%s", st, body)
	}
	if _, body, _ := do(t, "GET", api+"/history", "", ""); !strings.Contains(body, `"action":"restore #`+strconv.FormatInt(hs[2].ID, 10)+`"`) {
		t.Fatalf("the restore is not in the history: %s", body)
	}
	// Another rule's change, or none, is not restored here.
	if st, _, _ := do(t, "POST", e.ConsoleURL+"/api/v1/rules/condition/"+svc+"/history/"+strconv.FormatInt(hs[2].ID, 10)+"/restore", "", "", auth...); st != 400 {
		t.Errorf("restore of another rule's change: %d", st)
	}
	if st, _, _ := do(t, "POST", api+"/history/99999/restore", "", "", auth...); st != 404 {
		t.Errorf("restore of no change: %d", st)
	}
	if st, _, _ := do(t, "POST", api+"/history/"+strconv.FormatInt(hs[2].ID, 10)+"/restore", "", ""); st != 401 {
		t.Errorf("restore without the token: %d", st)
	}
}

// A console beyond loopback needs a token to read as well: its pages send
// the browser to log in, the API and /metrics answer 401; the read-only
// token reads everything and changes nothing; the token does both.
func TestOpenConsoleNeedsATokenToRead(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	const token, readToken = "write-token", "read-token"
	for _, bad := range []console.Options{{Listen: "127.0.0.1:0", ReadToken: readToken}, {Listen: "127.0.0.1:0", Token: token, ReadToken: token}} {
		if _, err := console.New(testCtx(t), bad); err == nil || !strings.Contains(err.Error(), "read-token") {
			t.Errorf("token %q, read token %q: %v", bad.Token, bad.ReadToken, err)
		}
	}
	// Said to listen beyond loopback, served here through its handler.
	c, err := console.New(testCtx(t), console.Options{Listen: "192.0.2.10:8080", Token: token, ReadToken: readToken, Registry: e.Registry, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Shutdown(testCtx(t)) })
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	if err := c.Catalog().WaitLoaded(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	doc := "conditions:\n  - \"=> host = 127.0.0.1\"\n"
	b := browserClient(t)
	for _, c := range []struct {
		name, method, path, ctype, body string
		hdr                             []string
		status                          int
	}{
		{"API, no token", "GET", "/api/v1/services", "", "", nil, 401},
		{"metrics, no token", "GET", "/metrics", "", "", nil, 401},
		{"registry tree, no token", "GET", "/api/v1/registry/tree?path=/dubbo", "", "", nil, 401},
		{"API, wrong token", "GET", "/api/v1/services", "", "", []string{"Authorization", "Bearer nope"}, 401},
		{"API, read token", "GET", "/api/v1/services", "", "", []string{"Authorization", "Bearer " + readToken}, 200},
		{"metrics, read token", "GET", "/metrics", "", "", []string{"Authorization", "Bearer " + readToken}, 200},
		{"API, token", "GET", "/api/v1/services", "", "", []string{"Authorization", "Bearer " + token}, 200},
		{"page, no token", "GET", "/services", "", "", nil, 303},
		{"login page", "GET", "/login", "", "", nil, 200},
		{"stylesheet", "GET", "/static/console.css", "", "", nil, 200},
		{"change, read token", "PUT", "/api/v1/rules/condition/org.example.Greeter:1.0.0:", "application/yaml", doc, []string{"Authorization", "Bearer " + readToken}, 403},
		{"change, token", "PUT", "/api/v1/rules/condition/org.example.Greeter:1.0.0:", "application/yaml", doc, []string{"Authorization", "Bearer " + token}, 200},
	} {
		st, body, hdr := send(t, b, c.method, srv.URL+c.path, c.ctype, c.body, c.hdr...)
		if st != c.status {
			t.Errorf("%s: %d, want %d: %s", c.name, st, c.status, body)
		}
		if st == 303 && !strings.HasPrefix(hdr.Get("Location"), "/login?next=%2Fservices") {
			t.Errorf("%s: sent to %s", c.name, hdr.Get("Location"))
		}
	}

	// A dashboard screen logs in with the read token: it reads every page,
	// its forms are off, and a change is refused.
	_, page, _ := send(t, b, "GET", srv.URL+"/login?next=/rules", "", "")
	if !strings.Contains(page, "needs a token to read as well") {
		t.Fatalf("login page:\n%s", page)
	}
	csrf := csrfRE.FindStringSubmatch(page)[1]
	login := url.Values{"csrf": {csrf}, "token": {readToken}, "next": {"/rules"}}
	if st, _, hdr := send(t, b, "POST", srv.URL+"/login", "application/x-www-form-urlencoded", login.Encode()); st != 303 || hdr.Get("Location") != "/rules" {
		t.Fatalf("login with the read token: %d %s", st, hdr.Get("Location"))
	}
	for _, p := range []string{"/", "/services", "/services/" + greeter, "/rules", "/registry", "/forms/weight?key=org.example.Greeter:1.0.0:"} {
		st, body, _ := send(t, b, "GET", srv.URL+p, "", "")
		if st != 200 || !strings.Contains(body, `id="read-only"`) {
			t.Errorf("%s with the read token: %d", p, st)
		}
	}
	_, page, _ = send(t, b, "GET", srv.URL+"/rules/condition/org.example.Greeter:1.0.0:", "", "")
	if !strings.Contains(page, `<button name="action" value="save" id="save" disabled`) {
		t.Errorf("the rule form is not off for the read token:\n%s", page)
	}
	form := url.Values{"csrf": {csrfRE.FindStringSubmatch(page)[1]}, "action": {"disable"}}
	if st, body, _ := send(t, b, "POST", srv.URL+"/rules/condition/org.example.Greeter:1.0.0:", "application/x-www-form-urlencoded", form.Encode()); st != http.StatusForbidden || !strings.Contains(body, "read-only") {
		t.Errorf("a change with the read token's login: %d %s", st, body)
	}
}

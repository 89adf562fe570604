package console_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/console"
)

// One rule for the whole URL space: beyond loopback the console does not
// start without a token, with a registry (the web console) or without one
// (the statistics API and /metrics alone).
func TestRefusesOpenListenWithoutToken(t *testing.T) {
	for _, registry := range []string{"zookeeper://127.0.0.1:1", ""} {
		for _, listen := range []string{"0.0.0.0:0", "[::]:0", ":8080", "192.0.2.10:8080"} {
			_, err := console.New(testCtx(t), console.Options{Listen: listen, Registry: registry, Logger: quiet()})
			if err == nil || !strings.Contains(err.Error(), "console.token") {
				t.Errorf("listen %s without a token, registry %q: %v", listen, registry, err)
			}
		}
	}
}

// csrfOf reads the CSRF token out of a page's form.
var csrfRE = regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`)

func browserClient(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func send(t *testing.T, c *http.Client, method, u, ctype, body string, hdr ...string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestTokenCSRFAndOrigin(t *testing.T) {
	const token = "s3cret-console-token"
	e := startSystem(t, envOptions{noLoad: true, token: token})
	zkr := rulesAt(t, e)
	rule := e.ConsoleURL + "/api/v1/rules/condition/org.example.Greeter:1.0.0:"
	doc := "conditions:\n  - \"=> host = 127.0.0.1\"\n"

	// Reads need nothing; changes need the token.
	if st, _, _ := do(t, "GET", e.ConsoleURL+"/api/v1/services", "", ""); st != 200 {
		t.Fatalf("read without token: %d", st)
	}
	st, body, hdr := do(t, "PUT", rule, "application/yaml", doc)
	if st != 401 || hdr.Get("WWW-Authenticate") == "" || !strings.Contains(body, "Bearer") {
		t.Fatalf("change without token: %d %s", st, body)
	}
	if st, _, _ := do(t, "PUT", rule, "application/yaml", doc, "Authorization", "Bearer wrong"); st != 401 {
		t.Fatalf("wrong token: %d", st)
	}
	if st, _, _ := do(t, "DELETE", rule, "", "", "Authorization", "Bearer "+token[:5]); st != 401 {
		t.Fatalf("prefix of the token: %d", st)
	}
	if _, ok, _ := zkr.GetConfig(testCtx(t), "org.example.Greeter:1.0.0:.condition-router"); ok {
		t.Fatal("an unauthorized change was stored")
	}
	if st, body, _ := do(t, "PUT", rule, "application/yaml", doc, "Authorization", "Bearer "+token); st != 200 {
		t.Fatalf("with token: %d %s", st, body)
	}

	// Other origins and simple-form content types are refused, token or not.
	for _, c := range []struct {
		name  string
		ctype string
		hdr   []string
	}{
		{"other origin", "application/yaml", []string{"Origin", "http://evil.example", "Authorization", "Bearer " + token}},
		{"null origin", "application/yaml", []string{"Origin", "null", "Authorization", "Bearer " + token}},
		{"cross-site fetch", "application/yaml", []string{"Sec-Fetch-Site", "cross-site", "Authorization", "Bearer " + token}},
		{"text/plain", "text/plain", []string{"Authorization", "Bearer " + token}},
		{"form", "application/x-www-form-urlencoded", []string{"Authorization", "Bearer " + token}},
		{"multipart", "multipart/form-data; boundary=x", []string{"Authorization", "Bearer " + token}},
	} {
		if st, body, _ := do(t, "DELETE", rule, c.ctype, "", c.hdr...); st != 403 {
			t.Errorf("%s: %d %s", c.name, st, body)
		}
	}
	if _, ok, _ := zkr.GetConfig(testCtx(t), "org.example.Greeter:1.0.0:.condition-router"); !ok {
		t.Fatal("a refused DELETE deleted the rule")
	}

	// Every response forbids outside sources: pages, the API, its errors,
	// the statistics and the metrics.
	for _, p := range []string{"/", "/api/v1/services", "/nope", "/api/v1/nope", "/api/v1/stats?interface=" + greeter,
		"/api/v1/stats", "/metrics", "/static/console.css"} {
		_, _, hdr := do(t, "GET", e.ConsoleURL+p, "", "")
		csp := hdr.Get("Content-Security-Policy")
		if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self'") || hdr.Get("X-Frame-Options") != "DENY" ||
			hdr.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: CSP %q, X-Frame-Options %q, X-Content-Type-Options %q", p, csp, hdr.Get("X-Frame-Options"), hdr.Get("X-Content-Type-Options"))
		}
	}

	// A browser: the rule page's form needs the login and its CSRF token.
	b := browserClient(t)
	_, page, _ := send(t, b, "GET", e.ConsoleURL+"/rules/condition/org.example.Greeter:1.0.0:", "", "")
	m := csrfRE.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the rule page")
	}
	form := url.Values{"csrf": {m[1]}, "action": {"disable"}}
	st, _, hdr = send(t, b, "POST", e.ConsoleURL+"/rules/condition/org.example.Greeter:1.0.0:", "application/x-www-form-urlencoded", form.Encode())
	if st != 303 || !strings.HasPrefix(hdr.Get("Location"), "/login") {
		t.Fatalf("form before login: %d %s", st, hdr.Get("Location"))
	}
	// Another token of the same shape (a token starting "00" was once
	// "forged" as itself: 1 run in 256 failed).
	forged := []byte(m[1])
	forged[0] = map[bool]byte{true: '1', false: '0'}[forged[0] == '0']
	bad := url.Values{"csrf": {string(forged)}, "token": {token}}
	if st, _, _ := send(t, b, "POST", e.ConsoleURL+"/login", "application/x-www-form-urlencoded", bad.Encode()); st != 403 {
		t.Fatalf("login with a forged CSRF token: %d", st)
	}
	wrong := url.Values{"csrf": {m[1]}, "token": {"guess"}}
	if st, _, _ := send(t, b, "POST", e.ConsoleURL+"/login", "application/x-www-form-urlencoded", wrong.Encode()); st != 401 {
		t.Fatalf("login with a wrong token: %d", st)
	}
	login := url.Values{"csrf": {m[1]}, "token": {token}, "next": {"//evil.example/"}}
	st, _, hdr = send(t, b, "POST", e.ConsoleURL+"/login", "application/x-www-form-urlencoded", login.Encode())
	if st != 303 || hdr.Get("Location") != "/" || !strings.Contains(hdr.Get("Set-Cookie"), "HttpOnly") || strings.Contains(hdr.Get("Set-Cookie"), token) {
		t.Fatalf("login: %d %v", st, hdr)
	}
	if st, _, _ := send(t, b, "POST", e.ConsoleURL+"/rules/condition/org.example.Greeter:1.0.0:", "application/x-www-form-urlencoded",
		url.Values{"action": {"disable"}}.Encode()); st != 403 {
		t.Fatalf("logged-in form without CSRF token: %d", st)
	}
	st, _, _ = send(t, b, "POST", e.ConsoleURL+"/rules/condition/org.example.Greeter:1.0.0:", "application/x-www-form-urlencoded", form.Encode())
	if st != 303 {
		t.Fatalf("logged-in form: %d", st)
	}
	doc2, _, _ := zkr.GetConfig(testCtx(t), "org.example.Greeter:1.0.0:.condition-router")
	if !strings.Contains(doc2, "enabled: false") {
		t.Fatalf("form did not disable the rule:\n%s", doc2)
	}
}

// TestOutputIsEscaped registers names with markup in them, as any
// registry client could, and checks no page renders it as markup.
func TestOutputIsEscaped(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	conn, _, err := zk.Connect([]string{e.zkAddr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	evil := `<script>alert(1)</script>`
	iface := "com.example.X" + url.QueryEscape(`"><img src=x>`)
	u := "dubbo://127.0.0.1:1/com.example.X?application=" + url.QueryEscape(evil) + "&interface=com.example.X&version=" + url.QueryEscape(`"><b>v`)
	acl := zk.WorldACL(zk.PermAll)
	for _, p := range []string{"/dubbo/" + iface, "/dubbo/" + iface + "/providers"} {
		if _, err := conn.Create(p, nil, 0, acl); err != nil && err != zk.ErrNodeExists {
			t.Fatal(err)
		}
	}
	if _, err := conn.Create("/dubbo/"+iface+"/providers/"+url.QueryEscape(u), []byte(evil), 0, acl); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Create("/dubbo/config/dubbo/"+evil[:7]+".condition-router", []byte("conditions: [\""+evil+"\"]"), 0, acl); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the console's copy", func() bool { return len(e.console.Catalog().Services()) == 2 })
	for _, p := range []string{"/", "/services", "/services/" + url.PathEscape(`com.example.X"><img src=x>`), "/rules", "/applications",
		"/registry?path=" + url.QueryEscape("/dubbo/"+iface+"/providers"), "/services?q=" + url.QueryEscape(evil)} {
		st, body, _ := do(t, "GET", e.ConsoleURL+p, "", "")
		if st != 200 {
			t.Errorf("%s: %d", p, st)
		}
		for _, raw := range []string{"<script>alert", `"><img`, `"><b>`} {
			if strings.Contains(body, raw) {
				t.Errorf("%s renders %q unescaped", p, raw)
			}
		}
	}
}

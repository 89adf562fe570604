package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/dubbo-lab/dubbo/console/catalog"
	"github.com/dubbo-lab/dubbo/console/rules"
	"github.com/dubbo-lab/dubbo/node/url"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticRoot embed.FS

// staticFS serves /static/: the stylesheet and the refresh script.
var staticFS = mustSub(staticRoot, "static")

func mustSub(f embed.FS, dir string) fs.FS {
	s, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return s
}

// pageNames are the templates, each rendered inside layout.html.
var pageNames = []string{"overview", "services", "service", "test", "applications", "application",
	"rules", "rule", "registry", "login", "error"}

type pages struct {
	t map[string]*template.Template
}

var funcs = template.FuncMap{
	"pathesc":  neturl.PathEscape,
	"queryesc": neturl.QueryEscape,
	"percent":  func(f float64) string { return strconv.FormatFloat(f*100, 'f', 2, 64) + "%" },
	"rate":     func(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) },
	"millis": func(ms int64) string {
		if ms == 0 {
			return ""
		}
		return time.UnixMilli(ms).Format("2006-01-02 15:04:05")
	},
	"since": func(t time.Time) string { return time.Since(t).Round(time.Second).String() },
	"join":  strings.Join,
	"ruleURL": func(kind, key string) string {
		return "/rules/" + neturl.PathEscape(kind) + "/" + neturl.PathEscape(key)
	},
	"apiRuleURL": func(kind, key string) string {
		return "/api/v1/rules/" + neturl.PathEscape(kind) + "/" + neturl.PathEscape(key)
	},
	"treeURL": func(p string) string { return "/registry?path=" + neturl.QueryEscape(p) },
	"child": func(parent, name string) string {
		return strings.TrimSuffix(parent, "/") + "/" + name
	},
	"crumbs": func(p string) []crumb {
		out := []crumb{{"/", "/"}}
		acc := ""
		for _, e := range strings.Split(strings.Trim(p, "/"), "/") {
			if e == "" {
				continue
			}
			acc += "/" + e
			out = append(out, crumb{e, acc})
		}
		return out
	},
}

type crumb struct{ Name, Path string }

func newPages() (*pages, error) {
	p := &pages{t: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		p.t[name] = t
	}
	return p, nil
}

// view is what every page template gets.
type view struct {
	Title    string
	Nav      string
	D        any
	CSRF     string
	Token    bool // a token is configured
	LoggedIn bool
	Refresh  int64 // ms between refreshes of the live part
	Live     string
}

// render writes page name with data d: the whole page, or with
// ?partial=1 only its "live" part (what the refresh script fetches).
func (c *Console) render(ec echo.Context, status int, name string, d any) error {
	t := c.pages.t[name]
	v := view{Title: name, Nav: name, D: d, CSRF: c.csrfToken(ec), Token: c.opts.Token != "",
		LoggedIn: c.loggedIn(ec.Request()), Refresh: c.opts.Refresh.Milliseconds()}
	switch m := d.(type) {
	case map[string]any:
		if s, ok := m["Title"].(string); ok {
			v.Title = s
		}
	case *testData:
		v.Title = m.Title
	}
	u := *ec.Request().URL
	q := u.Query()
	q.Set("partial", "1")
	u.RawQuery = q.Encode()
	v.Live = u.RequestURI()
	tmpl := "layout"
	if ec.QueryParam("partial") == "1" && t.Lookup("live") != nil {
		tmpl = "live"
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, tmpl, v); err != nil {
		return fmt.Errorf("render %s: %w", name, err)
	}
	return ec.HTMLBlob(status, b.Bytes())
}

func (c *Console) pageOverview(ec echo.Context) error {
	return c.render(ec, http.StatusOK, "overview", map[string]any{"Title": "Overview", "O": c.overview(ec.Request().Context())})
}

func (c *Console) pageServices(ec echo.Context) error {
	q := ec.QueryParam("q")
	return c.render(ec, http.StatusOK, "services", map[string]any{"Title": "Services", "Q": q, "Services": c.services(q)})
}

func (c *Console) pageService(ec echo.Context) error {
	ctx := ec.Request().Context()
	d, err := c.service(param(ec, "interface"))
	if err != nil {
		// /services/<app> is where Dubbo keeps an application's
		// instances; the console shows them at /applications/<app>.
		if _, ok := c.cat.Application(param(ec, "interface")); ok {
			return ec.Redirect(http.StatusFound, "/applications/"+neturl.PathEscape(param(ec, "interface")))
		}
		return err
	}
	ps, err := c.providers(d.Interface, nil, nil)
	if err != nil {
		return err
	}
	ms, err := c.methods(ctx, d.Interface, nil, nil)
	if err != nil {
		c.log.Debug("methods not read", "interface", d.Interface, "err", err)
	}
	return c.render(ec, http.StatusOK, "service", map[string]any{
		"Title": d.Interface, "S": d, "Providers": ps, "Methods": ms, "Rules": c.serviceRules(d),
		"Charts": c.charts(ctx, d.Interface, ec.QueryParam("range"), ec.QueryParam("side")), "Ranges": Ranges,
		"NewRule": newConditionRule(d),
	})
}

// newConditionRule is the key and YAML the "add a condition rule" link
// starts from: the service's first version and group.
func newConditionRule(d catalog.ServiceDetail) map[string]string {
	v, g := "", ""
	if len(d.Rows) > 0 {
		v, g = d.Rows[0].Version, d.Rows[0].Group
	}
	return map[string]string{"Kind": rules.KindCondition, "Key": url.ColonSeparatedKey(d.Interface, v, g)}
}

func (c *Console) formProvider(ec echo.Context) error {
	ctx := ec.Request().Context()
	iface, addr := param(ec, "interface"), param(ec, "address")
	version, group := ec.FormValue("version"), ec.FormValue("group")
	var err error
	switch ec.FormValue("action") {
	case "weight":
		w, perr := strconv.Atoi(strings.TrimSpace(ec.FormValue("weight")))
		if perr != nil {
			return badRequest("weight %q is not a number", ec.FormValue("weight"))
		}
		err = c.setWeight(ctx, iface, addr, &version, &group, w)
	case "enable":
		err = c.setEnabled(ctx, iface, addr, &version, &group, true)
	case "disable":
		err = c.setEnabled(ctx, iface, addr, &version, &group, false)
	default:
		return badRequest("unknown action %q", ec.FormValue("action"))
	}
	if err != nil {
		return err
	}
	return ec.Redirect(http.StatusSeeOther, "/services/"+neturl.PathEscape(iface))
}

// testData is the test page's model.
type testData struct {
	Title     string
	Interface string
	Methods   []MethodView
	Chosen    int
	Args      string
	Status    int
	Result    string
	Error     *errorDetail
	Class     string
	Types     string
	Done      bool
}

func (c *Console) pageTest(ec echo.Context) error {
	iface := param(ec, "interface")
	ms, err := c.methods(ec.Request().Context(), iface, nil, nil)
	if err != nil {
		return err
	}
	d := &testData{Title: "Test " + iface, Interface: iface, Methods: ms, Args: "[]"}
	if m := ec.QueryParam("method"); m != "" {
		for i, mv := range ms {
			if mv.Name == m {
				d.Chosen = i
				break
			}
		}
	}
	if len(ms) > 0 {
		d.Args = sampleArgs(ms[d.Chosen].ParameterTypes)
	}
	return c.render(ec, http.StatusOK, "test", d)
}

// sampleArgs is a starting point for the arguments of a method.
func sampleArgs(types []string) string {
	parts := make([]string, len(types))
	for i, t := range types {
		switch t {
		case "java.lang.String":
			parts[i] = `"world"`
		case "int", "long", "short", "byte", "java.lang.Integer", "java.lang.Long", "double", "float":
			parts[i] = "1"
		case "boolean", "java.lang.Boolean":
			parts[i] = "true"
		case "java.util.Map":
			parts[i] = `{"key": "value"}`
		case "java.util.List":
			parts[i] = "[]"
		default:
			parts[i] = `{"class": "` + t + `"}`
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// formTest makes the call through the API's invoke (the gateway) and shows
// what it answered.
func (c *Console) formTest(ec echo.Context) error {
	iface := param(ec, "interface")
	ms, err := c.methods(ec.Request().Context(), iface, nil, nil)
	if err != nil {
		return err
	}
	d := &testData{Title: "Test " + iface, Interface: iface, Methods: ms, Args: ec.FormValue("args"), Done: true}
	i, err := strconv.Atoi(ec.FormValue("method"))
	if err != nil || i < 0 || i >= len(ms) {
		return badRequest("pick a method")
	}
	d.Chosen = i
	m := ms[i]
	q := neturl.Values{"version": {m.Version}, "group": {m.Group}}
	if m.Signature != m.Name+"(?)" {
		q.Set("types", strings.Join(m.ParameterTypes, ","))
	}
	r, err := http.NewRequestWithContext(ec.Request().Context(), http.MethodPost,
		"/invoke/"+neturl.PathEscape(iface)+"/"+neturl.PathEscape(m.Name)+"?"+q.Encode(), strings.NewReader(d.Args))
	if err != nil {
		return err
	}
	r.Header.Set("Content-Type", "application/json")
	var w recorder
	c.gw.Handler().ServeHTTP(&w, r)
	d.Status, d.Types = w.status, w.header.Get("Dubbo-Param-Types")
	var ok struct {
		Result json.RawMessage `json:"result"`
	}
	var bad struct {
		Error struct {
			errorDetail
			Class string `json:"class"`
		} `json:"error"`
	}
	if w.status == http.StatusOK && json.Unmarshal(w.body.Bytes(), &ok) == nil {
		var pretty bytes.Buffer
		if json.Indent(&pretty, ok.Result, "", "  ") == nil {
			d.Result = pretty.String()
		} else {
			d.Result = string(ok.Result)
		}
	} else if json.Unmarshal(w.body.Bytes(), &bad) == nil {
		d.Error, d.Class = &bad.Error.errorDetail, bad.Error.Class
	} else {
		d.Error = &errorDetail{Kind: "other", Message: w.body.String()}
	}
	return c.render(ec, http.StatusOK, "test", d)
}

// recorder is a ResponseWriter that keeps what the gateway answered.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header {
	if r.header == nil {
		r.header = http.Header{}
	}
	return r.header
}

func (r *recorder) WriteHeader(s int) {
	if r.status == 0 {
		r.status = s
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

func (c *Console) pageApplications(ec echo.Context) error {
	return c.render(ec, http.StatusOK, "applications", map[string]any{"Title": "Applications", "Apps": c.cat.Applications()})
}

func (c *Console) pageApplication(ec echo.Context) error {
	a, ok := c.cat.Application(param(ec, "name"))
	if !ok {
		return notFound("application %s has no instances in the registry", param(ec, "name"))
	}
	return c.render(ec, http.StatusOK, "application", map[string]any{"Title": a.Name, "App": a,
		"Rules": c.ruleViews(func(_, key string) bool { return key == a.Name })})
}

func (c *Console) pageRules(ec echo.Context) error {
	return c.render(ec, http.StatusOK, "rules", map[string]any{"Title": "Rules", "Rules": c.ruleViews(nil), "Kinds": rules.Kinds})
}

// ruleTemplates start a new rule of each kind.
var ruleTemplates = map[string]string{
	rules.KindCondition: "scope: service\nkey: org.example.Greeter\nenabled: true\nforce: false\nruntime: true\npriority: 0\nconditions:\n  - \"method = sayHello => host = 127.0.0.1\"\n",
	rules.KindTag:       "key: greeter-app\nenabled: true\nforce: false\nruntime: true\npriority: 0\ntags:\n  - name: gray\n    addresses: [\"127.0.0.1:20881\"]\n",
	rules.KindOverride:  "configVersion: v3.0\nscope: service\nkey: org.example.Greeter\nenabled: true\nconfigs:\n  - side: provider\n    addresses: [\"0.0.0.0\"]\n    parameters:\n      timeout: 3000\n",
}

func (c *Console) pageRuleEdit(ec echo.Context) error {
	kind, key := param(ec, "kind"), param(ec, "key")
	d := map[string]any{"Title": "New rule", "Kinds": rules.Kinds, "New": key == ""}
	if key == "" {
		kind = ec.QueryParam("kind")
		if kind == "" {
			kind = rules.KindCondition
		}
		key = ec.QueryParam("key")
		doc := ruleTemplates[kind]
		if k := key; k != "" && kind != rules.KindTag {
			doc = strings.Replace(doc, "key: org.example.Greeter", "key: "+interfaceOfKey(k), 1)
		}
		d["Doc"] = doc
	} else {
		doc, err := c.getRule(ec.Request().Context(), kind, key)
		if err != nil {
			return err
		}
		d["Title"], d["Doc"], d["Enabled"] = kind+" rule "+key, doc, rules.Enabled([]byte(doc))
	}
	d["Kind"], d["Key"] = kind, key
	return c.render(ec, http.StatusOK, "rule", d)
}

func interfaceOfKey(k string) string {
	i, _, _ := strings.Cut(k, ":")
	return i
}

// formRule saves, enables, disables or deletes a rule from the rule page.
// A rule that does not pass the checks is shown again with the problem;
// nothing is stored.
func (c *Console) formRule(ec echo.Context) error {
	ctx := ec.Request().Context()
	kind, key := param(ec, "kind"), param(ec, "key")
	isNew := key == ""
	if isNew {
		kind, key = ec.FormValue("kind"), strings.TrimSpace(ec.FormValue("key"))
	}
	doc := ec.FormValue("yaml")
	var err error
	switch ec.FormValue("action") {
	case "delete":
		if err = c.deleteRule(ctx, kind, key); err == nil {
			return ec.Redirect(http.StatusSeeOther, "/rules")
		}
	case "enable", "disable":
		if _, err = c.setRuleEnabled(ctx, kind, key, ec.FormValue("action") == "enable"); err == nil {
			return ec.Redirect(http.StatusSeeOther, "/rules")
		}
	default:
		if _, err = c.putRule(ctx, kind, key, []byte(doc)); err == nil {
			return ec.Redirect(http.StatusSeeOther, "/rules/"+neturl.PathEscape(kind)+"/"+neturl.PathEscape(key)+"?saved=1")
		}
	}
	ae := classify(err).(*apiErr)
	if ae.status >= 500 {
		return err
	}
	return c.render(ec, ae.status, "rule", map[string]any{"Title": "Rule not saved", "Kinds": rules.Kinds, "New": isNew,
		"Kind": kind, "Key": key, "Doc": doc, "Error": ae.msg, "Enabled": rules.Enabled([]byte(doc))})
}

func (c *Console) pageRegistry(ec echo.Context) error {
	p := ec.QueryParam("path")
	if p == "" {
		p = "/"
	}
	n, err := c.cat.Browse(ec.Request().Context(), p)
	if err != nil {
		return err
	}
	return c.render(ec, http.StatusOK, "registry", map[string]any{"Title": "Registry " + p, "N": n})
}

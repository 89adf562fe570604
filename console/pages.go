package console

import (
	"bytes"
	"cmp"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/dubbo-lab/dubbo/console/catalog"
	"github.com/dubbo-lab/dubbo/console/rules"
	"github.com/dubbo-lab/dubbo/monitor/store"
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

type pages struct {
	t map[string]*template.Template
}

var funcs = template.FuncMap{
	"pathesc": neturl.PathEscape,
	"percent": percentText,
	// success is the success rate of calls with this error rate.
	"success": func(errorRate float64) string { return percentText(1 - errorRate) },
	"rate":    rateText,
	"millis": func(ms int64) string {
		if ms == 0 {
			return ""
		}
		return time.UnixMilli(ms).Format("2006-01-02 15:04:05")
	},
	"since": func(t time.Time) string { return time.Since(t).Round(time.Second).String() },
	"ms":    msText,
	// pms is a percentile: "—" when no reporter sent a histogram.
	"pms": func(v *float64) string {
		if v == nil {
			return "—"
		}
		return msText(*v)
	},
	"clock": func(unix int64) string {
		if unix == 0 {
			return "—"
		}
		return time.Unix(unix, 0).Format("2006-01-02 15:04:05")
	},
	"localInput": localInput,
	"join":       strings.Join,
	"ruleURL": func(kind, key string) string {
		return "/rules/" + neturl.PathEscape(kind) + "/" + neturl.PathEscape(key)
	},
	"apiRuleURL": func(kind, key string) string {
		return "/api/v1/rules/" + neturl.PathEscape(kind) + "/" + neturl.PathEscape(key)
	},
	"treeURL":  func(p string) string { return "/registry?path=" + neturl.QueryEscape(p) },
	"formsFor": formsFor,
	"formURL": func(form, key string) string {
		return "/forms/" + neturl.PathEscape(form) + "?key=" + neturl.QueryEscape(key)
	},
	// clause is one clause row of the condition builder, named.
	"clause": func(name string, c clauseRow) namedClause { return namedClause{name, c.Key, c.Op, c.Values} },
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

func rateText(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) }

func percentText(f float64) string { return strconv.FormatFloat(f*100, 'f', 2, 64) + "%" }

// msText is a latency in milliseconds, to three significant digits or
// the millisecond.
func msText(v float64) string {
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

type crumb struct{ Name, Path string }

// page is a page's view: the typed data its template reads as .D.
type page interface {
	// name is the page's template (templates/<name>.html, inside
	// layout.html), and the entry the navigation lights.
	name() string
	title() string
}

// allPages has one view of each page: newPages builds their templates,
// and renders each with this empty view to check it.
var allPages = []page{overviewPage{}, servicesPage{}, servicePage{}, testPage{}, instancesPage{}, dependenciesPage{}, applicationsPage{},
	applicationPage{}, rulesPage{}, rulePage{}, formPage{}, registryPage{}, loginPage{}, errorPage{}}

// newPages parses the templates of fsys (templates/*.html: templateFS)
// and renders each page once with its empty view: a template that reads a
// field its view does not have (a misspelt one) fails here, at start-up,
// rather than in front of a user. missingkey=error makes a missing map key
// fail as well.
func newPages(fsys fs.FS) (*pages, error) {
	p := &pages{t: map[string]*template.Template{}}
	for _, pg := range allPages {
		name := pg.name()
		t, err := template.New(name).Option("missingkey=error").Funcs(funcs).ParseFS(fsys, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		p.t[name] = t
		if _, err := p.execute(pg, view{Title: pg.title(), Nav: name, D: pg}, false); err != nil {
			return nil, fmt.Errorf("console: %w", err)
		}
	}
	return p, nil
}

// execute renders a page's view: the whole page, or only its "live" part
// (when it has one).
func (p *pages) execute(pg page, v view, live bool) ([]byte, error) {
	t := p.t[pg.name()]
	tmpl := "layout"
	if live && t.Lookup("live") != nil {
		tmpl = "live"
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, tmpl, v); err != nil {
		return nil, fmt.Errorf("render %s: %w", pg.name(), err)
	}
	return b.Bytes(), nil
}

// view is what every page template gets.
type view struct {
	Title    string
	Nav      string
	D        page
	CSRF     string
	Token    bool  // a token is configured
	LoggedIn bool  // may make changes
	ReadOnly bool  // logged in with the read-only token
	Refresh  int64 // ms between refreshes of the live part
	Live     string
}

// render writes page pg: the whole page, or with ?partial=1 only its
// "live" part (what the refresh script fetches).
func (c *Console) render(ec echo.Context, status int, pg page) error {
	v := c.viewOf(ec, pg)
	u := *ec.Request().URL
	q := u.Query()
	q.Set("partial", "1")
	u.RawQuery = q.Encode()
	v.Live = u.RequestURI()
	b, err := c.pages.execute(pg, v, ec.QueryParam("partial") == "1")
	if err != nil {
		return err
	}
	return ec.HTMLBlob(status, b)
}

// viewOf is what pg's templates get for this request.
func (c *Console) viewOf(ec echo.Context, pg page) view {
	level := c.accessOf(ec.Request())
	return view{Title: pg.title(), Nav: pg.name(), D: pg, CSRF: c.csrfToken(ec), Token: c.opts.Token != "",
		LoggedIn: level == accessWrite, ReadOnly: level == accessRead, Refresh: c.opts.Refresh.Milliseconds()}
}

// overviewPage is /.
type overviewPage struct{ Overview Overview }

func (overviewPage) name() string  { return "overview" }
func (overviewPage) title() string { return "Overview" }

func (c *Console) pageOverview(ec echo.Context) error {
	return c.render(ec, http.StatusOK, overviewPage{Overview: c.overview(ec.Request().Context())})
}

// servicesPage is /services?q=&sort=.
type servicesPage struct {
	Query string
	Sort  string
	Stats bool // the console has statistics
	ServiceList
}

func (servicesPage) name() string  { return "services" }
func (servicesPage) title() string { return "Services" }

// SortURL is the list in another order.
func (p servicesPage) SortURL(sort string) string {
	return "/services?" + neturl.Values{"q": {p.Query}, "sort": {sort}}.Encode()
}

func (c *Console) pageServices(ec echo.Context) error {
	q, sort := ec.QueryParam("q"), ec.QueryParam("sort")
	l, err := c.services(ec.Request().Context(), q, sort)
	if err != nil {
		return err
	}
	return c.render(ec, http.StatusOK, servicesPage{Query: q, Sort: cmp.Or(sort, SortName), Stats: c.opts.Stats != nil, ServiceList: l})
}

// servicePage is /services/{interface}?range=&from=&to=&side=&version=&group=:
// the service's view, its traffic drawn, and where a new rule for it
// starts.
type servicePage struct {
	Service ServiceView
	Charts  Charts // drawn when Service.Traffic has no Error
	Ranges  []Range
	// NewRuleKey is the key the "add a rule" links and the forms start
	// from: the service's first version and group.
	NewRuleKey string
	// ProviderApps are the providers' applications, whose tag routing the
	// page links to.
	ProviderApps []string
}

func (servicePage) name() string    { return "service" }
func (p servicePage) title() string { return p.Service.Interface }

func (c *Console) pageService(ec echo.Context) error {
	sel, err := c.trafficSelOf(ec)
	if err != nil {
		return err
	}
	v, err := c.serviceView(ec.Request().Context(), param(ec, "interface"), sel)
	if err != nil {
		// /services/<app> is where Dubbo keeps an application's
		// instances; the console shows them at /applications/<app>.
		if _, ok := c.cat.Application(param(ec, "interface")); ok {
			return ec.Redirect(http.StatusFound, "/applications/"+neturl.PathEscape(param(ec, "interface")))
		}
		return err
	}
	p := servicePage{Service: v, Ranges: Ranges, NewRuleKey: newRuleKey(v), ProviderApps: providerApps(v)}
	if v.Traffic.Error == "" {
		p.Charts = charts(v.Traffic)
	}
	return c.render(ec, http.StatusOK, p)
}

// providerApps are the applications of v's providers, sorted.
func providerApps(v ServiceView) []string {
	var out []string
	for _, p := range v.Providers {
		if p.Application != "" && !slices.Contains(out, p.Application) {
			out = append(out, p.Application)
		}
	}
	slices.Sort(out)
	return out
}

// newRuleKey is the service key of v's first version and group.
func newRuleKey(v ServiceView) string {
	ver, g := "", ""
	if len(v.Rows) > 0 {
		ver, g = v.Rows[0].Version, v.Rows[0].Group
	}
	return url.ColonSeparatedKey(v.Interface, ver, g)
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

// instancesPage is /instances?q=.
type instancesPage struct {
	Query string
	Stats bool // the console has statistics
	InstanceList
}

// Rows are the instances the table shows: at most maxRows.
func (p instancesPage) Rows() []InstanceRow { return p.Instances[:min(len(p.Instances), maxRows)] }

func (instancesPage) name() string  { return "instances" }
func (instancesPage) title() string { return "Instances" }

func (c *Console) pageInstances(ec echo.Context) error {
	q := ec.QueryParam("q")
	return c.render(ec, http.StatusOK, instancesPage{Query: q, Stats: c.opts.Stats != nil, InstanceList: c.instances(ec.Request().Context(), q)})
}

// dependenciesPage is /dependencies?range=&from=&to=&application=.
type dependenciesPage struct {
	Dependencies
	Map      template.HTML // "" when there are too many services to draw
	MapLimit int
	Ranges   []Range
}

// Rows are the edges the table shows: at most maxRows.
func (p dependenciesPage) Rows() []Edge { return p.Edges[:min(len(p.Edges), maxRows)] }

func (dependenciesPage) name() string  { return "dependencies" }
func (dependenciesPage) title() string { return "Dependencies" }

// link is the page (a query string) with the window or the application
// changed by change.
func (p dependenciesPage) link(change func(q neturl.Values)) string {
	q := neturl.Values{}
	if p.Window.Range == customRange {
		q.Set("from", strconv.FormatInt(p.Window.From, 10))
		q.Set("to", strconv.FormatInt(p.Window.To, 10))
	} else {
		q.Set("range", p.Window.Range)
	}
	if p.Application != "" {
		q.Set("application", p.Application)
	}
	change(q)
	return "?" + q.Encode()
}

// RangeLink shows the preset range name.
func (p dependenciesPage) RangeLink(name string) string {
	return p.link(func(q neturl.Values) { q.Del("from"); q.Del("to"); q.Set("range", name) })
}

// AppLink shows the edges of one application, or all ("").
func (p dependenciesPage) AppLink(app string) string {
	return p.link(func(q neturl.Values) {
		if q.Del("application"); app != "" {
			q.Set("application", app)
		}
	})
}

func (c *Console) pageDependencies(ec echo.Context) error {
	d, err := c.dependenciesOf(ec)
	if err != nil {
		return err
	}
	return c.render(ec, http.StatusOK, dependenciesPage{Dependencies: d, Map: depMap(d), MapLimit: mapLimit, Ranges: Ranges})
}

// applicationsPage is /applications.
type applicationsPage struct{ Apps []catalog.Application }

func (applicationsPage) name() string  { return "applications" }
func (applicationsPage) title() string { return "Applications" }

func (c *Console) pageApplications(ec echo.Context) error {
	return c.render(ec, http.StatusOK, applicationsPage{Apps: c.cat.Applications()})
}

// applicationPage is /applications/{name}: its instances, and the rules
// keyed by it.
type applicationPage struct {
	App   catalog.Application
	Rules []RuleView
}

func (applicationPage) name() string    { return "application" }
func (p applicationPage) title() string { return p.App.Name }

func (c *Console) pageApplication(ec echo.Context) error {
	a, ok := c.cat.Application(param(ec, "name"))
	if !ok {
		return notFound("application %s has no instances in the registry", param(ec, "name"))
	}
	return c.render(ec, http.StatusOK, applicationPage{App: a, Rules: c.ruleViews(func(_, key string) bool { return key == a.Name })})
}

// rulesPage is /rules?kind=&service=&application=.
type rulesPage struct {
	Filter RuleFilter
	Kinds  []string
	Rules  []RuleView
	Forms  []formSpec
}

func (rulesPage) name() string  { return "rules" }
func (rulesPage) title() string { return "Rules" }

func (c *Console) pageRules(ec echo.Context) error {
	f := ruleFilterOf(ec)
	return c.render(ec, http.StatusOK, rulesPage{Filter: f, Kinds: rules.Kinds, Rules: c.ruleViews(f.keeps), Forms: formSpecs})
}

// ruleTemplates start a new rule of each kind.
var ruleTemplates = map[string]string{
	rules.KindCondition: "scope: service\nkey: org.example.Greeter\nenabled: true\nforce: false\nruntime: true\npriority: 0\nconditions:\n  - \"method = sayHello => host = 127.0.0.1\"\n",
	rules.KindTag:       "key: greeter-app\nenabled: true\nforce: false\nruntime: true\npriority: 0\ntags:\n  - name: gray\n    addresses: [\"127.0.0.1:20881\"]\n",
	rules.KindOverride:  "configVersion: v3.0\nscope: service\nkey: org.example.Greeter\nenabled: true\nconfigs:\n  - side: provider\n    addresses: [\"0.0.0.0\"]\n    parameters:\n      timeout: 3000\n",
}

// rulePage is /rules/new and /rules/{kind}/{key}: one rule's editor.
type rulePage struct {
	New     bool // a rule not stored yet: Kind and Key can be chosen
	Kind    string
	Key     string
	Doc     string // the YAML
	Enabled bool
	Kinds   []string // the kinds a new rule can be
	Error   string   // why the form's rule was not saved
	// Path is where the rule is stored; Warnings what it says that the
	// runtime does not apply.
	Path     string
	Warnings []string
	// Forms edit parts of this rule.
	Forms []formSpec
	// History are the rule's changes, newest first; HistoryError why
	// there are none to show. Missing says the rule is not stored (it was
	// deleted: its history can restore it).
	History      []changeView
	HistoryError string
	Missing      bool
	Restored     string // the change whose version was just restored
}

// changeView is one change in a rule's history: the version it wrote
// (for a deletion, the one it deleted), and whether that version is the
// stored one.
type changeView struct {
	store.Change
	Version string
	Deleted bool
	Current bool
}

func (rulePage) name() string { return "rule" }

func (p rulePage) title() string {
	switch {
	case p.Error != "":
		return "Rule not saved"
	case p.New:
		return "New rule"
	}
	return p.Kind + " rule " + p.Key
}

func (c *Console) pageRuleEdit(ec echo.Context) error {
	ctx := ec.Request().Context()
	kind, key := param(ec, "kind"), param(ec, "key")
	p := rulePage{New: key == "", Kinds: rules.Kinds}
	if p.New {
		kind = ec.QueryParam("kind")
		if kind == "" {
			kind = rules.KindCondition
		}
		key = ec.QueryParam("key")
		p.Doc = ruleTemplates[kind]
		if key != "" && kind != rules.KindTag {
			p.Doc = strings.Replace(p.Doc, "key: org.example.Greeter", "key: "+interfaceOfKey(key), 1)
		}
	} else {
		doc, err := c.getRule(ctx, kind, key)
		if err != nil && classify(err).status != http.StatusNotFound {
			return err
		}
		c.fillHistory(ctx, &p, kind, key, doc)
		if err != nil {
			if len(p.History) == 0 {
				return err
			}
			p.Missing = true // deleted: its history can bring it back
		}
		p.Doc, p.Enabled = doc, rules.Enabled([]byte(doc))
		p.Warnings = rules.Warnings(kind, []byte(doc))
	}
	p.Kind, p.Key, p.Path = kind, key, rulePath(kind, key)
	p.Forms = formsOf(kind, key)
	p.Restored = ec.QueryParam("restored")
	return c.render(ec, http.StatusOK, p)
}

// fillHistory puts the rule's history in its page; current is the stored
// document.
func (c *Console) fillHistory(ctx context.Context, p *rulePage, kind, key, current string) {
	hs, err := c.history(ctx, kind, key)
	if err != nil {
		p.HistoryError = classify(err).msg
		return
	}
	for _, h := range hs {
		v := changeView{Change: h, Deleted: h.New == nil}
		switch {
		case h.New != nil:
			v.Version = *h.New
		case h.Old != nil:
			v.Version = *h.Old
		}
		v.Current = h.New != nil && *h.New == current
		p.History = append(p.History, v)
	}
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
	case "restore":
		id, perr := strconv.ParseInt(ec.FormValue("change"), 10, 64)
		if perr != nil {
			return badRequest("change %q is not a number", ec.FormValue("change"))
		}
		if _, err = c.restore(ctx, kind, key, id); err == nil {
			return ec.Redirect(http.StatusSeeOther, "/rules/"+neturl.PathEscape(kind)+"/"+neturl.PathEscape(key)+"?restored="+strconv.FormatInt(id, 10))
		}
	case "delete":
		if err = c.deleteRule(ctx, kind, key, "delete"); err == nil {
			return ec.Redirect(http.StatusSeeOther, "/rules")
		}
	case "enable", "disable":
		if _, err = c.setRuleEnabled(ctx, kind, key, ec.FormValue("action") == "enable"); err == nil {
			return ec.Redirect(http.StatusSeeOther, "/rules")
		}
	default:
		if _, err = c.putRule(ctx, kind, key, []byte(doc), "save"); err == nil {
			return ec.Redirect(http.StatusSeeOther, "/rules/"+neturl.PathEscape(kind)+"/"+neturl.PathEscape(key)+"?saved=1")
		}
	}
	ae := classify(err)
	if ae.status >= 500 {
		return err
	}
	return c.render(ec, ae.status, rulePage{New: isNew, Kind: kind, Key: key, Doc: doc, Enabled: rules.Enabled([]byte(doc)),
		Kinds: rules.Kinds, Error: ae.msg, Path: rulePath(kind, key)})
}

// registryPage is /registry?path=: one node of the registry's tree.
type registryPage struct{ Node catalog.Node }

func (registryPage) name() string    { return "registry" }
func (p registryPage) title() string { return "Registry " + p.Node.Path }

func (c *Console) pageRegistry(ec echo.Context) error {
	n, err := c.browse(ec)
	if err != nil {
		return err
	}
	return c.render(ec, http.StatusOK, registryPage{Node: n})
}

// loginPage is /login.
type loginPage struct {
	Next  string // where to go once logged in
	Error string
	// Open says reading needs a token too (the console listens beyond
	// loopback); ReadToken that a read-only token is configured.
	Open, ReadToken bool
}

func (loginPage) name() string  { return "login" }
func (loginPage) title() string { return "Log in" }

// errorPage is what a page answers when it fails.
type errorPage struct {
	Status  int
	Message string
}

func (errorPage) name() string    { return "error" }
func (p errorPage) title() string { return http.StatusText(p.Status) }

package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	neturl "net/url"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/dubbo-lab/dubbo/console/catalog"
	"github.com/dubbo-lab/dubbo/console/rules"
	"github.com/dubbo-lab/dubbo/monitor/store"
)

// maxBody bounds request bodies other than test calls' (the gateway has
// its own limit).
const maxBody = 1 << 20

// param is a path parameter, unescaped.
func param(ec echo.Context, name string) string {
	v := ec.Param(name)
	if u, err := neturl.PathUnescape(v); err == nil {
		return u
	}
	return v
}

// optional returns a pointer to the query value when the parameter is
// present (so version= means "no version", absence means "any").
func optional(ec echo.Context, name string) *string {
	q := ec.Request().URL.Query()
	if !q.Has(name) {
		return nil
	}
	v := q.Get(name)
	return &v
}

// handleError answers every failed request: with the error page on the
// console's pages, in the API's error shape everywhere else.
func (c *Console) handleError(err error, ec echo.Context) {
	if ec.Response().Committed {
		return
	}
	ae := classify(err)
	if ae.status >= 500 {
		c.log.Warn("console request failed", "path", ec.Request().URL.Path, "err", err)
	}
	if p := ec.Request().URL.Path; !c.hasPages() || strings.HasPrefix(p, "/api/") || p == "/metrics" {
		_ = ec.JSON(ae.status, errorBody{errorDetail{Kind: ae.kind, Message: ae.msg}})
		return
	}
	_ = c.render(ec, ae.status, errorPage{Status: ae.status, Message: ae.msg})
}

// apiIndex answers / when the console has no registry to show: what it
// serves instead.
func (c *Console) apiIndex(ec echo.Context) error {
	return ec.String(http.StatusOK, "dubbo monitor: no web console without a registry (registry.address)\n\n"+
		"GET /api/v1/stats?interface=&method=&side=provider|consumer&address=&version=&group=&from=&to=&limit=\n"+
		"GET /api/v1/series?interface=&method=&side=&address=&version=&group=&from=&to=&step=\n"+
		"GET /api/v1/traffic?by=service|method|provider|consumer|application|edge&interface=&method=&side=&version=&group=&application=&host=&from=&to=\n"+
		"GET /metrics\n")
}

func (c *Console) apiOverview(ec echo.Context) error {
	return ec.JSON(http.StatusOK, c.overview(ec.Request().Context()))
}

// apiServices answers GET /api/v1/services?q=&sort= with the services
// list's rows (docs/console.md's API table): the registry's fields, and the
// calls of the last five complete minutes in "traffic".
func (c *Console) apiServices(ec echo.Context) error {
	l, err := c.services(ec.Request().Context(), ec.QueryParam("q"), ec.QueryParam("sort"))
	if err != nil {
		return err
	}
	if l.StatsError != "" {
		return errors.New(l.StatsError)
	}
	return ec.JSON(http.StatusOK, l.Services)
}

// apiService answers with what the service page shows, its traffic over
// ?range= (15m, 1h, 24h, 30d) or ?from=&to=, on ?side= (consumer,
// provider), of ?version= and ?group= (absent: all) included.
func (c *Console) apiService(ec echo.Context) error {
	sel, err := c.trafficSelOf(ec)
	if err != nil {
		return err
	}
	v, err := c.serviceView(ec.Request().Context(), param(ec, "interface"), sel)
	if err != nil {
		return err
	}
	return ec.JSON(http.StatusOK, v)
}

func (c *Console) apiProviders(ec echo.Context) error {
	ps, err := c.providers(ec.Request().Context(), param(ec, "interface"), optional(ec, "version"), optional(ec, "group"))
	if err != nil {
		return err
	}
	return ec.JSON(http.StatusOK, ps)
}

func (c *Console) apiConsumers(ec echo.Context) error {
	d, err := c.service(param(ec, "interface"))
	if err != nil {
		return err
	}
	return ec.JSON(http.StatusOK, d.Consumers)
}

func (c *Console) apiMethods(ec echo.Context) error {
	ms, err := c.methods(ec.Request().Context(), param(ec, "interface"), optional(ec, "version"), optional(ec, "group"))
	if err != nil {
		return err
	}
	return ec.JSON(http.StatusOK, ms)
}

func (c *Console) apiServiceRules(ec echo.Context) error {
	d, err := c.service(param(ec, "interface"))
	if err != nil {
		return err
	}
	return ec.JSON(http.StatusOK, c.serviceRules(d))
}

// readJSON decodes a small JSON body into v.
func readJSON(ec echo.Context, v any) error {
	b, err := io.ReadAll(io.LimitReader(ec.Request().Body, maxBody+1))
	if err != nil {
		return badRequest("reading body: %v", err)
	}
	if len(b) > maxBody {
		return badRequest("body larger than %d bytes", maxBody)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("body: %v", err)
	}
	return nil
}

func (c *Console) apiProviderWeight(ec echo.Context) error {
	var body struct {
		Weight *int `json:"weight"`
	}
	if err := readJSON(ec, &body); err != nil {
		return err
	}
	if body.Weight == nil {
		return badRequest(`body needs {"weight": N}`)
	}
	iface, addr := param(ec, "interface"), param(ec, "address")
	if err := c.setWeight(ec.Request().Context(), iface, addr, optional(ec, "version"), optional(ec, "group"), *body.Weight); err != nil {
		return err
	}
	return c.apiProvidersAt(ec, iface, addr, func(p ProviderView) bool { return p.Weight == *body.Weight })
}

func (c *Console) apiProviderEnabled(ec echo.Context) error {
	var body struct {
		Enabled *bool `json:"enabled"`
	}
	if err := readJSON(ec, &body); err != nil {
		return err
	}
	if body.Enabled == nil {
		return badRequest(`body needs {"enabled": true|false}`)
	}
	iface, addr := param(ec, "interface"), param(ec, "address")
	if err := c.setEnabled(ec.Request().Context(), iface, addr, optional(ec, "version"), optional(ec, "group"), *body.Enabled); err != nil {
		return err
	}
	return c.apiProvidersAt(ec, iface, addr, func(p ProviderView) bool { return p.Enabled == *body.Enabled })
}

// apiProvidersAt answers a provider change with the provider as the
// registry shows it once the change is in force: a provider re-registers
// its URL when a rule changes it, so it is briefly missing. After 3 s it
// answers with what there is.
func (c *Console) apiProvidersAt(ec echo.Context, iface, addr string, done func(ProviderView) bool) error {
	deadline := time.Now().Add(3 * time.Second)
	for {
		ps, err := c.providers(ec.Request().Context(), iface, optional(ec, "version"), optional(ec, "group"))
		if err != nil {
			return err
		}
		for _, p := range ps {
			if p.Address == addr && (done(p) || time.Now().After(deadline)) {
				return ec.JSON(http.StatusOK, p)
			}
		}
		if time.Now().After(deadline) {
			return ec.NoContent(http.StatusNoContent)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// apiInstances answers GET /api/v1/instances?q=: every provider and
// consumer process, from the registry and the monitor's reports of the
// last five complete minutes.
func (c *Console) apiInstances(ec echo.Context) error {
	l := c.instances(ec.Request().Context(), ec.QueryParam("q"))
	if l.StatsError != "" {
		return errors.New(l.StatsError)
	}
	return ec.JSON(http.StatusOK, l)
}

// dependenciesOf reads who calls whom as the request asks: over ?range=
// or ?from=&to= (default the last 15 minutes), of ?application= (default
// every application).
func (c *Console) dependenciesOf(ec echo.Context) (Dependencies, error) {
	w, err := windowOf(c.opts.Now(), c.rawRetention(), ec.QueryParam("range"), ec.QueryParam("from"), ec.QueryParam("to"))
	if err != nil {
		return Dependencies{}, err
	}
	return c.dependencies(ec.Request().Context(), w, ec.QueryParam("application")), nil
}

// apiDependencies answers GET /api/v1/dependencies: who calls whom.
func (c *Console) apiDependencies(ec echo.Context) error {
	d, err := c.dependenciesOf(ec)
	if err != nil {
		return err
	}
	if d.StatsError != "" {
		return errors.New(d.StatsError)
	}
	return ec.JSON(http.StatusOK, d)
}

func (c *Console) apiApplications(ec echo.Context) error {
	return ec.JSON(http.StatusOK, c.cat.Applications())
}

func (c *Console) apiApplication(ec echo.Context) error {
	a, ok := c.cat.Application(param(ec, "name"))
	if !ok {
		return notFound("application %s has no instances in the registry", param(ec, "name"))
	}
	return ec.JSON(http.StatusOK, a)
}

// apiRules answers GET /api/v1/rules?kind=&service=&application=: the
// rules the filter selects (ruleFilterOf).
func (c *Console) apiRules(ec echo.Context) error {
	return ec.JSON(http.StatusOK, c.ruleViews(ruleFilterOf(ec).keeps))
}

// ruleFilterOf reads a rules filter from the query.
func ruleFilterOf(ec echo.Context) RuleFilter {
	return RuleFilter{Kind: ec.QueryParam("kind"), Service: ec.QueryParam("service"), Application: ec.QueryParam("application")}
}

// ruleKey is the rule's key path parameter.
func ruleKey(ec echo.Context, kind string) string {
	if kind == rules.KindTag {
		return param(ec, "application")
	}
	return param(ec, "key")
}

func (c *Console) apiGetRule(kind string) echo.HandlerFunc {
	return func(ec echo.Context) error {
		doc, err := c.getRule(ec.Request().Context(), kind, ruleKey(ec, kind))
		if err != nil {
			return err
		}
		return ec.Blob(http.StatusOK, "application/yaml; charset=utf-8", []byte(doc))
	}
}

// yamlTypes are the content types a rule may be sent with.
var yamlTypes = []string{"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"}

func (c *Console) apiPutRule(kind string) echo.HandlerFunc {
	return func(ec echo.Context) error {
		mt, _, _ := mime.ParseMediaType(ec.Request().Header.Get(echo.HeaderContentType))
		known := false
		for _, t := range yamlTypes {
			known = known || mt == t
		}
		if !known {
			return &apiErr{http.StatusUnsupportedMediaType, kindUnsupportedMediaType,
				fmt.Sprintf("content type %q: send the rule as Content-Type: application/yaml", mt)}
		}
		b, err := io.ReadAll(io.LimitReader(ec.Request().Body, maxBody+1))
		if err != nil {
			return badRequest("reading body: %v", err)
		}
		if len(b) > maxBody {
			return badRequest("rule larger than %d bytes", maxBody)
		}
		out, err := c.putRule(ec.Request().Context(), kind, ruleKey(ec, kind), b, "save")
		if err != nil {
			return err
		}
		return ec.Blob(http.StatusOK, "application/yaml; charset=utf-8", out)
	}
}

func (c *Console) apiDeleteRule(kind string) echo.HandlerFunc {
	return func(ec echo.Context) error {
		if err := c.deleteRule(ec.Request().Context(), kind, ruleKey(ec, kind), "delete"); err != nil {
			return err
		}
		return ec.NoContent(http.StatusNoContent)
	}
}

func (c *Console) apiRuleEnabled(kind string) echo.HandlerFunc {
	return func(ec echo.Context) error {
		var body struct {
			Enabled *bool `json:"enabled"`
		}
		if err := readJSON(ec, &body); err != nil {
			return err
		}
		if body.Enabled == nil {
			return badRequest(`body needs {"enabled": true|false}`)
		}
		out, err := c.setRuleEnabled(ec.Request().Context(), kind, ruleKey(ec, kind), *body.Enabled)
		if err != nil {
			return err
		}
		return ec.Blob(http.StatusOK, "application/yaml; charset=utf-8", out)
	}
}

// apiRuleHistory answers GET /api/v1/rules/{kind}/{key}/history: the
// rule's changes, newest first (the audit table's rows).
func (c *Console) apiRuleHistory(kind string) echo.HandlerFunc {
	return func(ec echo.Context) error {
		hs, err := c.history(ec.Request().Context(), kind, ruleKey(ec, kind))
		if err != nil {
			return err
		}
		return ec.JSON(http.StatusOK, hs)
	}
}

// apiRestoreRule answers POST /api/v1/rules/{kind}/{key}/history/{id}/restore
// with the version of the rule change id wrote, stored again.
func (c *Console) apiRestoreRule(kind string) echo.HandlerFunc {
	return func(ec echo.Context) error {
		id, err := strconv.ParseInt(param(ec, "id"), 10, 64)
		if err != nil {
			return badRequest("change id %q is not a number", param(ec, "id"))
		}
		out, err := c.restore(ec.Request().Context(), kind, ruleKey(ec, kind), id)
		if err != nil {
			return err
		}
		return ec.Blob(http.StatusOK, "application/yaml; charset=utf-8", out)
	}
}

// apiInvoke is the gateway's invoke: the same JSON ⇄ Java conversion and
// error kinds as dubbo call and the consumer's HTTP gateway.
func (c *Console) apiInvoke(ec echo.Context) error {
	r := ec.Request().Clone(ec.Request().Context())
	r.URL.Path = "/invoke/" + neturl.PathEscape(param(ec, "interface")) + "/" + neturl.PathEscape(param(ec, "method"))
	r.URL.RawPath = ""
	c.gw.Handler().ServeHTTP(ec.Response(), r)
	return nil
}

func (c *Console) apiTree(ec echo.Context) error {
	n, err := c.browse(ec)
	if err != nil {
		return err
	}
	return ec.JSON(http.StatusOK, n)
}

// browse is the registry node ?path= names, the root when none: what the
// registry page shows and GET /api/v1/registry/tree answers.
func (c *Console) browse(ec echo.Context) (catalog.Node, error) {
	p := ec.QueryParam("path")
	if p == "" {
		p = "/"
	}
	return c.cat.Browse(ec.Request().Context(), p)
}

// apiStats answers GET /api/v1/stats with the store's rows (docs/console.md's
// fields, plus the row's interval, node, service and peer, and its
// percentiles: p50_ms, p90_ms, p99_ms, null for reporters that send no
// histogram).
func (c *Console) apiStats(ec echo.Context) error {
	if c.opts.Stats == nil {
		return errNoStats
	}
	f, err := store.ParseFilter(ec.Request().URL.Query())
	if err != nil {
		return err
	}
	rows, err := c.opts.Stats.Query(ec.Request().Context(), f)
	if err != nil {
		return err
	}
	if rows == nil {
		rows = []store.Row{}
	}
	return ec.JSON(http.StatusOK, rows)
}

// apiSeries answers the charts' sums, with each bucket's percentiles:
// GET /api/v1/series?interface=&from=&to=&step=.
func (c *Console) apiSeries(ec echo.Context) error {
	if c.opts.Stats == nil {
		return errNoStats
	}
	q, err := store.ParseSeriesQuery(ec.Request().URL.Query())
	if err != nil {
		return err
	}
	bs, err := c.opts.Stats.Series(ec.Request().Context(), q)
	if err != nil {
		return err
	}
	return ec.JSON(http.StatusOK, bs)
}

// apiTraffic answers the pages' summaries (store.Summary): the calls of a
// time range per service, method, provider, consumer, application or
// application → service edge, with rates, errors, latency percentiles and
// concurrency. from and to default to the last five complete minutes.
func (c *Console) apiTraffic(ec echo.Context) error {
	if c.opts.Stats == nil {
		return errNoStats
	}
	v := ec.Request().URL.Query()
	w := recent(c.opts.Now())
	if !v.Has("to") {
		v.Set("to", strconv.FormatInt(w.To, 10))
	}
	if !v.Has("from") {
		to, err := strconv.ParseInt(v.Get("to"), 10, 64)
		if err != nil {
			return badRequest("to=%q is not a Unix time in seconds", v.Get("to"))
		}
		v.Set("from", strconv.FormatInt(to-w.Seconds()+1, 10))
	}
	q, err := store.ParseSummaryQuery(v)
	if err != nil {
		return err
	}
	s, err := c.opts.Stats.Summary(ec.Request().Context(), q)
	if err != nil {
		return err
	}
	return ec.JSON(http.StatusOK, s)
}

package console

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	neturl "net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/dubbo-lab/dubbo/console/rules"
	"github.com/dubbo-lab/dubbo/node/cluster/loadbalance"
	"github.com/dubbo-lab/dubbo/node/url"
)

// The governance forms, /forms/{form}?key=: each edits one part of the
// rule document of a service key or an application (package rules owns
// what each part is), beside the whole document's YAML. Both are editable
// and kept in step through the server: the page's script posts the form
// (action sync-form or sync-yaml) when a field or the YAML changes and puts the answer in
// the other (syncForm); without the script, Save takes the fields.
// Saving checks that the stored document is still the one the page was
// opened with, so that two people do not overwrite each other unseen.

// formSpec is one form: its rule kind, and how its rows are read from a
// document, from the posted fields, and written into a document.
type formSpec struct {
	Name  string // in the URL and the templates ("fields-<name>")
	Title string
	Kind  string // the rule kind it edits
	// Keyed says what the key may be: a service key or an application
	// (override and condition rules), or a provider application (tags).
	Keyed string
	Help  string
	load  func(p *formPage, doc []byte) error
	read  func(p *formPage, f neturl.Values)
	apply func(p *formPage, doc []byte) ([]byte, bool, error)
}

// formSpecs are the forms, in the order pages list them.
var formSpecs = []formSpec{
	{Name: "weight", Title: "Weight", Kind: rules.KindOverride, Keyed: keyedEither,
		Help: "Each row weights the providers at its addresses (host or host:port; none: every provider of the service or application). Dubbo's default weight is 100; 0 takes no calls while others have weight.",
		load: loadWeights, read: readWeights, apply: applyWeights},
	{Name: "balancing", Title: "Load balancing", Kind: rules.KindOverride, Keyed: keyedEither,
		Help: "The load balancer consumers use, for every method or one.",
		load: loadBalancing, read: readBalancing, apply: applyBalancing},
	{Name: "timeout", Title: "Timeout and retries", Kind: rules.KindOverride, Keyed: keyedEither,
		Help: "Consumers' timeout (ms) and retries, for every method or one. Leave a field empty to leave it as configured.",
		load: loadTimeouts, read: readTimeouts, apply: applyTimeouts},
	{Name: "mock", Title: "Mock", Kind: rules.KindOverride, Keyed: keyedEither,
		Help: "Answer calls without the provider: force answers at once, fail only after a call failed (no provider, timeout, connection). A value is empty, null, true, false, a number, \"a string\" or JSON; throw takes an exception class, or none.",
		load: loadMocks, read: readMocks, apply: applyMocks},
	{Name: "access", Title: "Access control", Kind: rules.KindCondition, Keyed: keyedEither,
		Help: "Consumers refused (black list) or the only ones allowed (white list), by host or application, written as Dubbo Admin writes them into the condition rule.",
		load: loadAccess, read: readAccess, apply: applyAccess},
	{Name: "condition", Title: "Condition rule", Kind: rules.KindCondition, Keyed: keyedEither,
		Help: "Each condition selects calls (empty: every call) and sends them to the providers its destinations select; a condition without destination blocks the calls it selects. v3.1 draws among weighted destinations.",
		load: loadConditions, read: readConditions, apply: applyConditions},
	{Name: "tag", Title: "Tag routing", Kind: rules.KindTag, Keyed: keyedProviderApp,
		Help: "Which instances of the provider application carry which tag (host:port). Calls with that tag (dubbo.tag) go to them; untagged calls go to the instances in no tag; force fails a tagged call whose tag has no instance.",
		load: loadTags, read: readTags, apply: applyTags},
}

// What a form's key may be.
const (
	keyedEither      = "a service (interface:version:group) or an application"
	keyedProviderApp = "a provider application"
)

func formSpecOf(name string) (formSpec, bool) {
	i := slices.IndexFunc(formSpecs, func(s formSpec) bool { return s.Name == name })
	if i < 0 {
		return formSpec{}, false
	}
	return formSpecs[i], true
}

// formsOf are the forms that edit the rule of kind at key.
func formsOf(kind, key string) []formSpec {
	var out []formSpec
	for _, s := range formsFor(key) {
		if s.Kind == kind {
			out = append(out, s)
		}
	}
	return out
}

// formsFor are the forms that take key: every one an application, but
// tag routing for a service.
func formsFor(key string) []formSpec {
	var out []formSpec
	for _, s := range formSpecs {
		if s.Keyed == keyedEither || !strings.Contains(key, ":") {
			out = append(out, s)
		}
	}
	return out
}

// formPage is /forms/{form}?key=: the form's rows as text (what was typed
// stays as typed, a wrong number included, until it is fixed), the YAML,
// and what the choices offer.
type formPage struct {
	Spec  formSpec
	Key   string // "" until one is chosen
	Scope string
	// Stored is whether a document is stored at the key; Revision its
	// hash when the page was opened (saving checks it).
	Stored   bool
	Revision string
	Doc      string
	// Source is what Save writes: the fields ("form") or the YAML as
	// typed ("yaml"), whichever was edited last.
	Source   string
	Error    string
	Saved    bool
	Deleted  bool
	Warnings []string
	Path     string

	// Choices: the service's methods, the provider addresses of the key,
	// the keys to pick from, the load balancers.
	Methods    []string
	Addresses  []string
	Keys       []string
	Strategies []string

	Weights   []weightRow
	Balancing []balancingRow
	Timeouts  []timeoutRow
	Mocks     []mockRow
	Access    accessRow
	Conds     condsView
	Tags      tagsView
}

func (formPage) name() string    { return "form" }
func (p formPage) title() string { return p.Spec.Title }

type weightRow struct{ Weight, Addresses string }
type balancingRow struct{ Method, Strategy string }
type timeoutRow struct{ Method, Timeout, Retries string }

// mockRow is one mock: Mode fail or force, Action return or throw.
type mockRow struct{ Method, Mode, Action, Value string }
type accessRow struct{ Blacklist, Whitelist, AppBlacklist, AppWhitelist string }

type tagsView struct {
	Enabled, Force bool
	Tags           []tagRow
}

// tagRow is one tag: its addresses are picked among the key's provider
// addresses (Has) or typed (Others).
type tagRow struct {
	Name      string
	Addresses []string
}

// Has reports whether the tag has address a.
func (r tagRow) Has(a string) bool { return slices.Contains(r.Addresses, a) }

// Others are the tag's addresses that are not in known, as typed.
func (r tagRow) Others(known []string) string {
	var out []string
	for _, a := range r.Addresses {
		if !slices.Contains(known, a) {
			out = append(out, a)
		}
	}
	return strings.Join(out, ", ")
}

// condsView is the condition builder: Version v3.0 or v3.1.
type condsView struct {
	Version                 string
	Enabled, Force, Runtime bool
	Priority                string
	Conditions              []condRow
}
type condRow struct {
	When []clauseRow
	To   []destRow
}
type destRow struct {
	Match  []clauseRow
	Weight string
}
type clauseRow struct{ Key, Op, Values string }

// namedClause is a clause row with the name of its fields.
type namedClause struct{ Name, Key, Op, Values string }

// withSpares adds the empty rows a user fills to add one.
func (p *formPage) withSpares() {
	p.Weights = append(p.Weights, weightRow{})
	p.Balancing = append(p.Balancing, balancingRow{})
	p.Timeouts = append(p.Timeouts, timeoutRow{})
	p.Mocks = append(p.Mocks, mockRow{Mode: "fail", Action: "return"})
	p.Tags.Tags = append(p.Tags.Tags, tagRow{})
	for i := range p.Conds.Conditions {
		c := &p.Conds.Conditions[i]
		c.When = append(c.When, clauseRow{Op: "="})
		for j := range c.To {
			c.To[j].Match = append(c.To[j].Match, clauseRow{Op: "="})
		}
		if p.Conds.Version == router31 || len(c.To) == 0 {
			c.To = append(c.To, destRow{Match: []clauseRow{{Op: "="}}})
		}
	}
	p.Conds.Conditions = append(p.Conds.Conditions, condRow{When: []clauseRow{{Op: "="}}, To: []destRow{{Match: []clauseRow{{Op: "="}}}}})
}

const router31 = "v3.1"

// docRevision is a stored document's hash, "" for none.
func docRevision(doc string, stored bool) string {
	if !stored {
		return ""
	}
	h := sha256.Sum256([]byte(doc))
	return hex.EncodeToString(h[:8])
}

// newFormPage is a form's page for key with the stored document.
func (c *Console) newFormPage(ec echo.Context, spec formSpec, key string) (formPage, error) {
	p := formPage{Spec: spec, Key: key, Source: "form", Strategies: loadbalance.Names()}
	p.Keys = c.formKeys(spec)
	if key == "" {
		return p, nil
	}
	if err := rules.CheckKey(spec.Kind, key); err != nil {
		return p, err
	}
	doc, stored, err := c.rules.GetConfig(ec.Request().Context(), rules.ConfigKey(spec.Kind, key))
	if err != nil {
		return p, err
	}
	p.Stored, p.Revision, p.Doc, p.Path = stored, docRevision(doc, stored), doc, rulePath(spec.Kind, key)
	p.Scope = ruleScope(spec.Kind, key)
	c.formChoices(ec, &p)
	if err := spec.load(&p, []byte(doc)); err != nil {
		// A document the form cannot read stays editable as YAML.
		p.Error = err.Error()
	}
	p.Warnings = rules.Warnings(spec.Kind, []byte(doc))
	return p, nil
}

// formKeys are the keys a form offers: the services' keys and the
// applications, or the provider applications.
func (c *Console) formKeys(spec formSpec) []string {
	var keys []string
	if spec.Keyed == keyedEither {
		for _, s := range c.cat.Services() {
			keys = append(keys, url.ColonSeparatedKey(s.Interface, s.Version, s.Group))
		}
	}
	for _, a := range c.cat.Applications() {
		if spec.Keyed == keyedEither || len(a.Services) > 0 {
			keys = append(keys, a.Name)
		}
	}
	return slices.Compact(keys)
}

// formChoices fills the methods and addresses of the page's key.
func (c *Console) formChoices(ec echo.Context, p *formPage) {
	ctx := ec.Request().Context()
	if p.Scope == rules.ScopeService {
		iface, v, g := splitKey(p.Key)
		if ms, err := c.methods(ctx, iface, &v, &g); err == nil {
			for _, m := range ms {
				if !slices.Contains(p.Methods, m.Name) {
					p.Methods = append(p.Methods, m.Name)
				}
			}
		}
		if ps, err := c.providers(ctx, iface, &v, &g); err == nil {
			for _, pv := range ps {
				p.Addresses = append(p.Addresses, pv.Address)
			}
		}
	} else {
		p.Addresses = c.appAddresses(ctx, p.Key)
	}
	slices.Sort(p.Addresses)
	p.Addresses = slices.Compact(p.Addresses)
}

// splitKey reads interface:version:group.
func splitKey(key string) (iface, version, group string) {
	parts := strings.SplitN(key, ":", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return parts[0], parts[1], parts[2]
}

// pageForm is GET /forms/{form}?key=.
func (c *Console) pageForm(ec echo.Context) error {
	spec, ok := formSpecOf(param(ec, "form"))
	if !ok {
		return notFound("no form %q", param(ec, "form"))
	}
	p, err := c.newFormPage(ec, spec, strings.TrimSpace(ec.QueryParam("key")))
	if err != nil {
		return err
	}
	p.Saved, p.Deleted = ec.QueryParam("saved") == "1", ec.QueryParam("deleted") == "1"
	p.withSpares()
	return c.render(ec, http.StatusOK, p)
}

// postedForm is the page as posted: its key, the stored document's
// revision it was opened with, its fields and YAML.
func (c *Console) postedForm(ec echo.Context, spec formSpec) (formPage, error) {
	key := strings.TrimSpace(ec.FormValue("key"))
	p, err := c.newFormPage(ec, spec, key)
	if err != nil {
		return p, err
	}
	if key == "" {
		return p, badRequest("choose the %s the rule is for", spec.Keyed)
	}
	f, err := ec.FormParams()
	if err != nil {
		return p, badRequest("form: %v", err)
	}
	p.Error = ""
	p.Doc = strings.ReplaceAll(f.Get("yaml"), "\r\n", "\n")
	p.Source = f.Get("source")
	p.Revision = f.Get("revision")
	p.Weights, p.Balancing, p.Timeouts, p.Mocks, p.Access, p.Conds, p.Tags = nil, nil, nil, nil, accessRow{}, condsView{}, tagsView{}
	spec.read(&p, f)
	return p, nil
}

// formSync is the script's answer to a sync: the YAML the fields make,
// or the fields the YAML makes, and what is wrong.
type formSync struct {
	YAML   string `json:"yaml"`
	Fields string `json:"fields"`
	Error  string `json:"error"`
	// Empty says the document would be deleted: nothing is left in it.
	Empty bool `json:"empty"`
}

// formPost is POST /forms/{form}: save, or sync the fields and the YAML.
func (c *Console) formPost(ec echo.Context) error {
	spec, ok := formSpecOf(param(ec, "form"))
	if !ok {
		return notFound("no form %q", param(ec, "form"))
	}
	p, err := c.postedForm(ec, spec)
	if err != nil {
		return err
	}
	switch ec.FormValue("action") {
	case "sync-form":
		return c.syncForm(ec, p, "form")
	case "sync-yaml":
		return c.syncForm(ec, p, "yaml")
	case "save", "":
		return c.saveForm(ec, p)
	}
	return badRequest("unknown action %q", ec.FormValue("action"))
}

// syncForm puts the fields into the YAML (from "form") or the YAML into
// the fields (from "yaml"). The script gets JSON; a page without it gets
// the page again.
func (c *Console) syncForm(ec echo.Context, p formPage, from string) error {
	var s formSync
	if from == "yaml" {
		p.Source = "yaml"
		if err := p.Spec.load(&p, []byte(p.Doc)); err != nil {
			s.Error = err.Error()
		} else if strings.TrimSpace(p.Doc) != "" {
			if _, err := rules.Normalize(p.Spec.Kind, p.Key, []byte(p.Doc)); err != nil {
				s.Error = err.Error()
			}
		}
	} else {
		p.Source = "form"
		out, empty, err := p.Spec.apply(&p, []byte(p.Doc))
		switch {
		case err != nil:
			s.Error = err.Error()
		case empty:
			p.Doc, s.Empty = "", true
		default:
			p.Doc = string(out)
		}
	}
	s.YAML = p.Doc
	p.Error = s.Error
	p.withSpares()
	if !strings.Contains(ec.Request().Header.Get("Accept"), "application/json") {
		return c.render(ec, http.StatusOK, p)
	}
	fields, err := c.pages.fragment(p, "fields", c.viewOf(ec, p))
	if err != nil {
		return err
	}
	s.Fields = string(fields)
	return ec.JSON(http.StatusOK, s)
}

// saveForm writes the fields (or the YAML as typed) into the document at
// the key, deleting it when nothing is left, unless it changed since the
// page was opened.
func (c *Console) saveForm(ec echo.Context, p formPage) error {
	ctx := ec.Request().Context()
	ck := rules.ConfigKey(p.Spec.Kind, p.Key)
	cur, stored, err := c.rules.GetConfig(ctx, ck)
	if err != nil {
		return err
	}
	fail := func(status int, msg string) error {
		p.Error = msg
		p.withSpares()
		return c.render(ec, status, p)
	}
	if v := docRevision(cur, stored); v != p.Revision {
		return fail(http.StatusConflict, "the rule changed since this page was opened (someone saved it meanwhile): open it again to see the new version, then make your change")
	}
	var out []byte
	empty := false
	if p.Source == "yaml" {
		out = []byte(p.Doc)
		empty = strings.TrimSpace(p.Doc) == ""
	} else if out, empty, err = p.Spec.apply(&p, []byte(p.Doc)); err != nil {
		return fail(classify(err).status, classify(err).msg)
	}
	back := "/forms/" + p.Spec.Name + "?key=" + neturl.QueryEscape(p.Key)
	if empty {
		if stored {
			if err := c.deleteRule(ctx, p.Spec.Kind, p.Key, "form "+p.Spec.Name+": nothing left"); err != nil {
				return err
			}
		}
		return ec.Redirect(http.StatusSeeOther, back+"&deleted=1")
	}
	action := "form " + p.Spec.Name
	if p.Source == "yaml" {
		action += " (its YAML)"
	}
	if _, err := c.putRule(ctx, p.Spec.Kind, p.Key, out, action); err != nil {
		if ae := classify(err); ae.status < 500 {
			return fail(ae.status, ae.msg)
		}
		return err
	}
	return ec.Redirect(http.StatusSeeOther, back+"&saved=1")
}

// rowsOf reads the posted rows "<prefix>.<i>.<field>" in order, up to the
// first index with none of fields, leaving out rows where every field
// has its default (defaults[field], else "": an untouched spare row).
func rowsOf(f neturl.Values, prefix string, defaults map[string]string, fields ...string) []map[string]string {
	var out []map[string]string
	for i := 0; i < maxFormRows; i++ {
		row, any, filled := map[string]string{}, false, false
		for _, name := range fields {
			k := prefix + "." + strconv.Itoa(i) + "." + name
			if _, ok := f[k]; ok {
				any = true
			}
			row[name] = strings.TrimSpace(f.Get(k))
			filled = filled || row[name] != defaults[name]
		}
		if !any {
			break
		}
		if filled {
			out = append(out, row)
		}
	}
	return out
}

// maxFormRows bounds the rows of one list a form takes.
const maxFormRows = 200

// numberOf reads an optional whole number of a field.
func numberOf(s, what string) (*int, error) {
	if s = strings.TrimSpace(s); s == "" {
		return nil, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return nil, badRequest("%s %q is not a whole number", what, s)
	}
	return &n, nil
}

// listOf splits a list typed with commas, spaces or one per line.
func listOf(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}

func loadWeights(p *formPage, doc []byte) error {
	ws, err := rules.ReadWeights(doc)
	for _, w := range ws {
		p.Weights = append(p.Weights, weightRow{Weight: strconv.Itoa(w.Weight), Addresses: strings.Join(w.Addresses, ", ")})
	}
	return err
}

func readWeights(p *formPage, f neturl.Values) {
	for _, r := range rowsOf(f, "w", nil, "weight", "addresses") {
		p.Weights = append(p.Weights, weightRow{Weight: r["weight"], Addresses: r["addresses"]})
	}
}

func applyWeights(p *formPage, doc []byte) ([]byte, bool, error) {
	var ws []rules.Weight
	for i, r := range p.Weights {
		n, err := numberOf(r.Weight, "weight")
		if err != nil {
			return nil, false, err
		}
		if n == nil {
			return nil, false, badRequest("row %d has addresses but no weight", i+1)
		}
		ws = append(ws, rules.Weight{Weight: *n, Addresses: listOf(r.Addresses)})
	}
	return rules.ApplyWeights(doc, p.Key, ws)
}

func loadBalancing(p *formPage, doc []byte) error {
	bs, err := rules.ReadBalancing(doc)
	for _, b := range bs {
		p.Balancing = append(p.Balancing, balancingRow{Method: b.Method, Strategy: b.Strategy})
	}
	return err
}

func readBalancing(p *formPage, f neturl.Values) {
	for _, r := range rowsOf(f, "b", nil, "method", "strategy") {
		p.Balancing = append(p.Balancing, balancingRow{Method: r["method"], Strategy: r["strategy"]})
	}
}

func applyBalancing(p *formPage, doc []byte) ([]byte, bool, error) {
	var bs []rules.Balancing
	for _, r := range p.Balancing {
		bs = append(bs, rules.Balancing{Method: r.Method, Strategy: r.Strategy})
	}
	return rules.ApplyBalancing(doc, p.Key, bs)
}

func loadTimeouts(p *formPage, doc []byte) error {
	ts, err := rules.ReadTimeouts(doc)
	for _, t := range ts {
		r := timeoutRow{Method: t.Method}
		if t.Timeout != nil {
			r.Timeout = strconv.Itoa(*t.Timeout)
		}
		if t.Retries != nil {
			r.Retries = strconv.Itoa(*t.Retries)
		}
		p.Timeouts = append(p.Timeouts, r)
	}
	return err
}

func readTimeouts(p *formPage, f neturl.Values) {
	for _, r := range rowsOf(f, "t", nil, "method", "timeout", "retries") {
		if r["timeout"] == "" && r["retries"] == "" {
			continue // a method picked, nothing set yet
		}
		p.Timeouts = append(p.Timeouts, timeoutRow{Method: r["method"], Timeout: r["timeout"], Retries: r["retries"]})
	}
}

func applyTimeouts(p *formPage, doc []byte) ([]byte, bool, error) {
	var ts []rules.Timeout
	for _, r := range p.Timeouts {
		to, err := numberOf(r.Timeout, "timeout")
		if err != nil {
			return nil, false, err
		}
		re, err := numberOf(r.Retries, "retries")
		if err != nil {
			return nil, false, err
		}
		ts = append(ts, rules.Timeout{Method: r.Method, Timeout: to, Retries: re})
	}
	return rules.ApplyTimeouts(doc, p.Key, ts)
}

func loadMocks(p *formPage, doc []byte) error {
	ms, err := rules.ReadMocks(doc)
	for _, m := range ms {
		r := mockRow{Method: m.Method, Mode: "fail", Action: "return", Value: m.Value}
		if m.Force {
			r.Mode = "force"
		}
		if m.Throw {
			r.Action = "throw"
		}
		p.Mocks = append(p.Mocks, r)
	}
	return err
}

func readMocks(p *formPage, f neturl.Values) {
	for _, r := range rowsOf(f, "m", map[string]string{"mode": "fail", "action": "return"}, "method", "mode", "action", "value") {
		p.Mocks = append(p.Mocks, mockRow{Method: r["method"], Mode: r["mode"], Action: r["action"], Value: r["value"]})
	}
}

func applyMocks(p *formPage, doc []byte) ([]byte, bool, error) {
	var ms []rules.Mock
	for _, r := range p.Mocks {
		ms = append(ms, rules.Mock{Method: r.Method, Force: r.Mode == "force", Throw: r.Action == "throw", Value: r.Value})
	}
	return rules.ApplyMocks(doc, p.Key, ms)
}

func loadAccess(p *formPage, doc []byte) error {
	a, err := rules.ReadAccess(doc)
	p.Access = accessRow{Blacklist: strings.Join(a.Blacklist, ", "), Whitelist: strings.Join(a.Whitelist, ", "),
		AppBlacklist: strings.Join(a.AppBlacklist, ", "), AppWhitelist: strings.Join(a.AppWhitelist, ", ")}
	return err
}

func readAccess(p *formPage, f neturl.Values) {
	p.Access = accessRow{Blacklist: f.Get("a.blacklist"), Whitelist: f.Get("a.whitelist"),
		AppBlacklist: f.Get("a.app_blacklist"), AppWhitelist: f.Get("a.app_whitelist")}
}

func applyAccess(p *formPage, doc []byte) ([]byte, bool, error) {
	a := p.Access
	return rules.ApplyAccess(doc, p.Key, rules.Access{Blacklist: listOf(a.Blacklist), Whitelist: listOf(a.Whitelist),
		AppBlacklist: listOf(a.AppBlacklist), AppWhitelist: listOf(a.AppWhitelist)})
}

func loadTags(p *formPage, doc []byte) error {
	ts, err := rules.ReadTags(doc)
	p.Tags = tagsView{Enabled: ts.Enabled, Force: ts.Force}
	for _, t := range ts.Tags {
		p.Tags.Tags = append(p.Tags.Tags, tagRow{Name: t.Name, Addresses: t.Addresses})
	}
	return err
}

// readTags reads the tags: tag.<i>.name, the addresses picked
// (tag.<i>.pick, one each) and typed (tag.<i>.addresses).
func readTags(p *formPage, f neturl.Values) {
	p.Tags = tagsView{Enabled: f.Get("enabled") != "", Force: f.Get("force") != ""}
	for i := 0; i < maxFormRows; i++ {
		at := "tag." + strconv.Itoa(i) + "."
		if !hasPrefix(f, at) {
			break
		}
		r := tagRow{Name: strings.TrimSpace(f.Get(at + "name"))}
		for _, a := range append(f[at+"pick"], listOf(f.Get(at+"addresses"))...) {
			if !slices.Contains(r.Addresses, a) {
				r.Addresses = append(r.Addresses, a)
			}
		}
		if r.Name != "" || len(r.Addresses) > 0 {
			p.Tags.Tags = append(p.Tags.Tags, r)
		}
	}
}

func applyTags(p *formPage, doc []byte) ([]byte, bool, error) {
	ts := rules.Tags{Enabled: p.Tags.Enabled, Force: p.Tags.Force}
	for _, r := range p.Tags.Tags {
		ts.Tags = append(ts.Tags, rules.TagGroup{Name: r.Name, Addresses: r.Addresses})
	}
	return rules.ApplyTags(doc, p.Key, ts)
}

func clausesOf(match string) []clauseRow {
	var out []clauseRow
	for _, c := range rules.SplitMatch(match) {
		out = append(out, clauseRow{Key: c.Key, Op: c.Op, Values: c.Values})
	}
	return out
}

func matchOf(cs []clauseRow) string {
	var out []rules.Clause
	for _, c := range cs {
		out = append(out, rules.Clause{Key: c.Key, Op: c.Op, Values: c.Values})
	}
	return rules.JoinMatch(out)
}

func loadConditions(p *formPage, doc []byte) error {
	cs, err := rules.ReadConditions(doc)
	if err != nil {
		return err
	}
	v := condsView{Version: "v3.0", Enabled: cs.Enabled, Force: cs.Force, Runtime: cs.Runtime, Priority: strconv.Itoa(cs.Priority)}
	if cs.V31 {
		v.Version = router31
	}
	for _, c := range cs.Conditions {
		row := condRow{When: clausesOf(c.When)}
		for _, d := range c.To {
			w := ""
			if d.Weight != 0 {
				w = strconv.Itoa(d.Weight)
			}
			row.To = append(row.To, destRow{Match: clausesOf(d.Match), Weight: w})
		}
		v.Conditions = append(v.Conditions, row)
	}
	p.Conds = v
	return nil
}

// readConditions reads the builder's fields: c.<i>.w.<j>.{key,op,values}
// for a condition's clauses, c.<i>.t.<d>.<j>.{key,op,values} and
// c.<i>.t.<d>.weight for its destinations. A condition with no clause
// and no destination is left out; one with clauses but no destination
// blocks.
func readConditions(p *formPage, f neturl.Values) {
	v := condsView{Version: f.Get("configVersion"), Enabled: f.Get("enabled") != "", Force: f.Get("force") != "",
		Runtime: f.Get("runtime") != "", Priority: f.Get("priority")}
	if v.Version != router31 {
		v.Version = "v3.0"
	}
	clauses := func(prefix string) []clauseRow {
		var out []clauseRow
		for _, r := range rowsOf(f, prefix, map[string]string{"op": "="}, "key", "op", "values") {
			if r["key"] != "" {
				out = append(out, clauseRow{Key: r["key"], Op: r["op"], Values: r["values"]})
			}
		}
		return out
	}
	for i := 0; i < maxFormRows; i++ {
		ci := "c." + strconv.Itoa(i)
		if !hasPrefix(f, ci+".") {
			break
		}
		row := condRow{When: clauses(ci + ".w")}
		for d := 0; d < maxFormRows; d++ {
			di := ci + ".t." + strconv.Itoa(d)
			if !hasPrefix(f, di+".") {
				break
			}
			dest := destRow{Match: clauses(di), Weight: strings.TrimSpace(f.Get(di + ".weight"))}
			if len(dest.Match) > 0 || dest.Weight != "" {
				row.To = append(row.To, dest)
			}
		}
		if len(row.When) > 0 || len(row.To) > 0 {
			v.Conditions = append(v.Conditions, row)
		}
	}
	p.Conds = v
}

func hasPrefix(f neturl.Values, prefix string) bool {
	for k := range f {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func applyConditions(p *formPage, doc []byte) ([]byte, bool, error) {
	v := p.Conds
	prio, err := numberOf(v.Priority, "priority")
	if err != nil {
		return nil, false, err
	}
	cs := rules.Conditions{V31: v.Version == router31, Enabled: v.Enabled, Force: v.Force, Runtime: v.Runtime}
	if prio != nil {
		cs.Priority = *prio
	}
	for i, c := range v.Conditions {
		cond := rules.Condition{When: matchOf(c.When)}
		for j, d := range c.To {
			w, err := numberOf(d.Weight, fmt.Sprintf("condition %d, destination %d: weight", i+1, j+1))
			if err != nil {
				return nil, false, err
			}
			dest := rules.Destination{Match: matchOf(d.Match)}
			if w != nil {
				dest.Weight = *w
			}
			cond.To = append(cond.To, dest)
		}
		cs.Conditions = append(cs.Conditions, cond)
	}
	return rules.ApplyConditions(doc, p.Key, cs)
}

// fragment renders one named template of a page with its view (the
// form's fields, for the script).
func (p *pages) fragment(pg page, name string, v view) ([]byte, error) {
	var b bytes.Buffer
	if err := p.t[pg.name()].ExecuteTemplate(&b, name, v); err != nil {
		return nil, fmt.Errorf("render %s %s: %w", pg.name(), name, err)
	}
	return b.Bytes(), nil
}

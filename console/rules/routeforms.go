package rules

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/dubbo-lab/dubbo/node/cluster/router"
)

// Forms of routing rules: access control and the builder over condition
// rules (<key>.condition-router), and tags by address over tag rules
// (<provider application>.tag-router). See overrideforms.go for what a
// form is.

// Access is a black and white list of consumers, as Dubbo Admin's access
// control page writes it into the condition rule of a service or an
// application: "host = a,b =>" refuses those hosts, "host != a,b =>" every
// host but those; the same with "application" for consumer applications.
// In a v3.1 rule each list is a condition whose from matches the
// consumers and which has no to.
type Access struct {
	Blacklist    []string `json:"blacklist"`     // consumer hosts refused
	Whitelist    []string `json:"whitelist"`     // the only consumer hosts allowed
	AppBlacklist []string `json:"app_blacklist"` // consumer applications refused
	AppWhitelist []string `json:"app_whitelist"` // the only consumer applications allowed
}

// accessRule reads Admin's encoding: "<host|application> <=|!=> a,b =>".
var accessRule = regexp.MustCompile(`^\s*(host|application)\s*(!?=)\s*([^&=!>]+?)\s*=>\s*$`)

// accessMatch reads a v3.1 condition's from.match of the same meaning.
var accessMatch = regexp.MustCompile(`^\s*(host|application)\s*(!?=)\s*([^&=!>]+?)\s*$`)

// list returns the list of Access that a key and operator fill.
func (a *Access) list(key, op string) *[]string {
	switch {
	case key == "host" && op == "=":
		return &a.Blacklist
	case key == "host":
		return &a.Whitelist
	case op == "=":
		return &a.AppBlacklist
	}
	return &a.AppWhitelist
}

// accessOf reads the black or white list one condition is, if it is one.
func accessOf(c router.ConditionItem, v31 bool) (key, op string, values []string, ok bool) {
	var m []string
	switch {
	case !v31:
		m = accessRule.FindStringSubmatch(c.Rule)
	case c.From != nil && len(c.To) == 0 && len(c.Extra) == 0 && len(c.From.Extra) == 0:
		m = accessMatch.FindStringSubmatch(c.From.Match)
	}
	if m == nil {
		return "", "", nil, false
	}
	return m[1], m[2], splitList(m[3]), true
}

// ReadAccess reads the black and white lists of a condition rule.
func ReadAccess(doc []byte) (Access, error) {
	var a Access
	r, err := loadCondition(doc)
	if err != nil || r == nil {
		return a, err
	}
	for _, c := range r.Conditions {
		if key, op, values, ok := accessOf(c, r.IsV31()); ok {
			l := a.list(key, op)
			*l = append(*l, values...)
		}
	}
	return a, nil
}

// ApplyAccess replaces the black and white lists of the condition rule of
// key with a's, added after its other conditions as Admin adds them.
func ApplyAccess(doc []byte, key string, a Access) (out []byte, empty bool, err error) {
	if err := CheckKey(KindCondition, key); err != nil {
		return nil, false, err
	}
	r, err := loadCondition(doc)
	if err != nil {
		return nil, false, err
	}
	if r == nil {
		r = &router.ConditionRule{Enabled: true, Runtime: true}
	}
	v31 := r.IsV31()
	r.Conditions = slices.DeleteFunc(r.Conditions, func(c router.ConditionItem) bool { _, _, _, ok := accessOf(c, v31); return ok })
	for _, l := range []struct {
		key, op string
		values  []string
	}{{"host", "!=", a.Whitelist}, {"host", "=", a.Blacklist}, {"application", "!=", a.AppWhitelist}, {"application", "=", a.AppBlacklist}} {
		values, err := checkList(l.key, l.values)
		if err != nil {
			return nil, false, err
		}
		if len(values) == 0 {
			continue
		}
		match := l.key + " " + l.op + " " + strings.Join(values, ",")
		if v31 {
			r.Conditions = append(r.Conditions, router.ConditionItem{From: &router.ConditionFrom{Match: match}})
		} else {
			r.Conditions = append(r.Conditions, router.ConditionItem{Rule: match + " =>"})
		}
	}
	return writeCondition(key, r)
}

func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// checkList trims a list of hosts or applications and refuses what would
// change the condition's meaning.
func checkList(what string, values []string) ([]string, error) {
	var out []string
	for _, v := range values {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if strings.ContainsAny(v, "&=!,> \t") {
			return nil, fmt.Errorf("%w: %s %q: one %s per entry, without & = ! , > or spaces", ErrInvalid, what, v, what)
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out, nil
}

// loadCondition reads a stored condition rule, every field kept; nil for
// no document.
func loadCondition(doc []byte) (*router.ConditionRule, error) {
	return loadRule[router.ConditionRule](doc, "condition rule")
}

// loadRule reads a stored rule into the runtime's model of it, which
// keeps every field; nil for no document.
func loadRule[T any](doc []byte, what string) (*T, error) {
	if len(strings.TrimSpace(string(doc))) == 0 {
		return nil, nil
	}
	var r T
	if err := yaml.Unmarshal(doc, &r); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, what, err)
	}
	return &r, nil
}

// writeCondition checks and writes a condition rule; empty when it has
// no condition left.
func writeCondition(key string, r *router.ConditionRule) (out []byte, empty bool, err error) {
	if len(r.Conditions) == 0 {
		return nil, true, nil
	}
	b, err := marshal(r)
	if err != nil {
		return nil, false, err
	}
	out, err = Normalize(KindCondition, key, b)
	return out, false, err
}

// Conditions is the condition builder's view of a whole condition rule:
// its flags, and each condition as the calls it selects (When: v3.0's
// when, v3.1's from.match) and where they go (To: v3.0's then, one
// destination; v3.1's to, weighted; none blocks the calls).
type Conditions struct {
	V31        bool        `json:"v31"`
	Enabled    bool        `json:"enabled"`
	Force      bool        `json:"force"`
	Runtime    bool        `json:"runtime"`
	Priority   int         `json:"priority"`
	Conditions []Condition `json:"conditions"`
}

// Condition is one condition of Conditions.
type Condition struct {
	When string        `json:"when"`
	To   []Destination `json:"to"`
}

// Destination is one of a condition's destinations: the providers Match
// selects, drawn with Weight (v3.1; 0 is Dubbo's default).
type Destination struct {
	Match  string `json:"match"`
	Weight int    `json:"weight"`
}

// ReadConditions reads a condition rule for the builder; a new rule is
// enabled, runtime, v3.0.
func ReadConditions(doc []byte) (Conditions, error) {
	r, err := loadCondition(doc)
	if err != nil {
		return Conditions{}, err
	}
	if r == nil {
		return Conditions{Enabled: true, Runtime: true}, nil
	}
	cs := Conditions{V31: r.IsV31(), Enabled: r.Enabled, Force: r.Force, Runtime: r.Runtime, Priority: r.Priority}
	for _, c := range r.Conditions {
		if !cs.V31 {
			when, then := splitRule(c.Rule)
			var to []Destination
			if then != "" {
				to = []Destination{{Match: then}}
			}
			cs.Conditions = append(cs.Conditions, Condition{When: when, To: to})
			continue
		}
		var cond Condition
		if c.From != nil {
			cond.When = c.From.Match
		}
		for _, t := range c.To {
			cond.To = append(cond.To, Destination{Match: t.Match, Weight: t.Weight})
		}
		cs.Conditions = append(cs.Conditions, cond)
	}
	return cs, nil
}

// splitRule splits "when => then" as Java does: no "=>" is a then alone.
func splitRule(s string) (when, then string) {
	w, t, ok := strings.Cut(s, "=>")
	if !ok {
		return "", strings.TrimSpace(s)
	}
	return strings.TrimSpace(w), strings.TrimSpace(t)
}

// ApplyConditions writes the builder's rule into the condition rule of
// key. What the builder does not show is kept: the rule's other fields,
// and each condition's own (a v3.1 condition's priority, ...) for the
// condition at its place. Switching between v3.0 and v3.1 rewrites the
// conditions in the other form; a v3.0 condition takes one destination.
func ApplyConditions(doc []byte, key string, cs Conditions) (out []byte, empty bool, err error) {
	if err := CheckKey(KindCondition, key); err != nil {
		return nil, false, err
	}
	r, err := loadCondition(doc)
	if err != nil {
		return nil, false, err
	}
	if r == nil {
		r = &router.ConditionRule{}
	}
	old := r.Conditions
	wasV31 := r.IsV31()
	r.Enabled, r.Force, r.Runtime, r.Priority = cs.Enabled, cs.Force, cs.Runtime, cs.Priority
	switch {
	case cs.V31:
		r.ConfigVersion = router.ConfigVersion31
	case wasV31 || r.ConfigVersion == "":
		r.ConfigVersion = router.ConfigVersion30
	}
	r.Conditions = nil
	for i, c := range cs.Conditions {
		var item router.ConditionItem
		if i < len(old) && wasV31 == cs.V31 {
			item.Extra = old[i].Extra
		}
		if !cs.V31 {
			if len(c.To) > 1 {
				return nil, false, fmt.Errorf("%w: condition %d has %d destinations; a v3.0 condition has one (its then): use v3.1 for weights", ErrInvalid, i+1, len(c.To))
			}
			then := ""
			if len(c.To) == 1 {
				then = c.To[0].Match
			}
			item.Rule = strings.TrimSpace(strings.TrimSpace(c.When) + " => " + strings.TrimSpace(then))
			r.Conditions = append(r.Conditions, item)
			continue
		}
		var prev *router.ConditionItem
		if i < len(old) && wasV31 {
			prev = &old[i]
		}
		item.From = &router.ConditionFrom{Match: strings.TrimSpace(c.When)}
		if prev != nil && prev.From != nil {
			item.From.Extra = prev.From.Extra
		}
		for j, t := range c.To {
			if t.Weight < 0 {
				return nil, false, fmt.Errorf("%w: condition %d, destination %d: weight %d; give 0 (the default) or more", ErrInvalid, i+1, j+1, t.Weight)
			}
			dest := router.ConditionTo{Match: strings.TrimSpace(t.Match), Weight: t.Weight}
			if prev != nil && j < len(prev.To) {
				dest.Extra = prev.To[j].Extra
			}
			item.To = append(item.To, dest)
		}
		r.Conditions = append(r.Conditions, item)
	}
	return writeCondition(key, r)
}

// Clause is one test of a match expression: "<Key> <Op> <Values>", Op
// "=" or "!=", Values a comma-separated list ("a,b", "1~9", "$host",
// wildcards).
type Clause struct {
	Key    string `json:"key"`
	Op     string `json:"op"`
	Values string `json:"values"`
}

// SplitMatch reads a match expression ("method = sayHello & port != 1")
// into its clauses, in the order written.
func SplitMatch(s string) []Clause {
	var out []Clause
	for _, part := range strings.Split(s, "&") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		c := Clause{Key: part}
		if i := strings.Index(part, "!="); i >= 0 {
			c = Clause{Key: strings.TrimSpace(part[:i]), Op: "!=", Values: strings.TrimSpace(part[i+2:])}
		} else if i := strings.Index(part, "="); i >= 0 {
			c = Clause{Key: strings.TrimSpace(part[:i]), Op: "=", Values: strings.TrimSpace(part[i+1:])}
		}
		out = append(out, c)
	}
	return out
}

// JoinMatch writes clauses as a match expression; a clause without key is
// left out.
func JoinMatch(cs []Clause) string {
	var parts []string
	for _, c := range cs {
		key := strings.TrimSpace(c.Key)
		if key == "" {
			continue
		}
		op := c.Op
		if op != "!=" {
			op = "="
		}
		values := strings.Join(splitList(c.Values), ",")
		parts = append(parts, key+" "+op+" "+values)
	}
	return strings.Join(parts, " & ")
}

// TagGroup is a tag by address: the providers at Addresses (host:port)
// carry Name.
type TagGroup struct {
	Name      string   `json:"name"`
	Addresses []string `json:"addresses"`
}

// Tags is the tag form's view of a tag rule: its flags and its tags by
// address (tags by match are the YAML's to edit).
type Tags struct {
	Enabled bool       `json:"enabled"`
	Force   bool       `json:"force"`
	Tags    []TagGroup `json:"tags"`
}

// ReadTags reads the tags by address of a tag rule; a new rule is
// enabled.
func ReadTags(doc []byte) (Tags, error) {
	r, err := loadTag(doc)
	if err != nil {
		return Tags{}, err
	}
	if r == nil {
		return Tags{Enabled: true}, nil
	}
	ts := Tags{Enabled: r.Enabled, Force: r.Force}
	for _, t := range r.Tags {
		if len(t.Match) == 0 {
			ts.Tags = append(ts.Tags, TagGroup{Name: t.Name, Addresses: t.Addresses})
		}
	}
	return ts, nil
}

// ApplyTags writes the form's tags by address into the tag rule of the
// provider application app, where the first of them was (tags by match
// stay as they are), and the rule's flags.
func ApplyTags(doc []byte, app string, ts Tags) (out []byte, empty bool, err error) {
	if err := CheckKey(KindTag, app); err != nil {
		return nil, false, err
	}
	r, err := loadTag(doc)
	if err != nil {
		return nil, false, err
	}
	if r == nil {
		r = &router.TagRule{Runtime: true}
	}
	byAddress := func(t router.Tag) bool { return len(t.Match) == 0 }
	at := slices.IndexFunc(r.Tags, byAddress)
	old := map[string]router.Tag{}
	for _, t := range r.Tags {
		if byAddress(t) {
			old[t.Name] = t
		}
	}
	rest := slices.DeleteFunc(slices.Clone(r.Tags), byAddress)
	if at < 0 {
		at = len(rest)
	}
	var tags []router.Tag
	for i, g := range ts.Tags {
		name := strings.TrimSpace(g.Name)
		if name == "" {
			return nil, false, fmt.Errorf("%w: tag %d has no name", ErrInvalid, i+1)
		}
		if slices.ContainsFunc(tags, func(t router.Tag) bool { return t.Name == name }) || slices.ContainsFunc(rest, func(t router.Tag) bool { return t.Name == name }) {
			return nil, false, fmt.Errorf("%w: tag %s is named twice", ErrInvalid, name)
		}
		var addrs []string
		for _, a := range g.Addresses {
			if a = strings.TrimSpace(a); a == "" {
				continue
			}
			if err := checkAddress(a); err != nil {
				return nil, false, err
			}
			addrs = append(addrs, a)
		}
		if len(addrs) == 0 {
			return nil, false, fmt.Errorf("%w: tag %s has no address; give the host:port of the providers that carry it", ErrInvalid, name)
		}
		t := router.Tag{Name: name, Addresses: addrs, Extra: old[name].Extra}
		tags = append(tags, t)
	}
	r.Tags = slices.Insert(rest, at, tags...)
	r.Enabled, r.Force = ts.Enabled, ts.Force
	if len(r.Tags) == 0 {
		return nil, true, nil
	}
	b, err := marshal(r)
	if err != nil {
		return nil, false, err
	}
	out, err = Normalize(KindTag, app, b)
	return out, false, err
}

// loadTag reads a stored tag rule, every field kept; nil for no
// document.
func loadTag(doc []byte) (*router.TagRule, error) { return loadRule[router.TagRule](doc, "tag rule") }

// Package match holds Dubbo's value matchers: the small YAML objects with
// which tag rules (package router) pick providers by their parameters and
// override items (package configurator) pick the URLs they apply to, as
// Dubbo Admin writes them and Java Dubbo 3.3 reads them (its StringMatch,
// ParamMatch, AddressMatch and ListStringMatch), plus the IP patterns of
// Dubbo's NetUtils.matchIpExpression that tag addresses use.
//
// Every model keeps the fields it does not know in Extra, so that a rule
// read and written back loses nothing. Compile checks a model and prepares
// its regular expressions; Match works on an uncompiled model too, only
// slower.
package match

import (
	"fmt"
	"regexp"
	"strings"
)

// String is Dubbo's StringMatch: the first field set decides, in this
// order. A value absent from the URL (present false) only satisfies
// Empty.
type String struct {
	Exact  string `yaml:"exact,omitempty" json:"exact,omitempty"`
	Prefix string `yaml:"prefix,omitempty" json:"prefix,omitempty"`
	// Regex must match the whole value, as Java's String.matches.
	Regex string `yaml:"regex,omitempty" json:"regex,omitempty"`
	// Wildcard is "*" (any value) or a value to equal.
	Wildcard string `yaml:"wildcard,omitempty" json:"wildcard,omitempty"`
	// Empty (any text) matches an absent or empty value, Noempty (any
	// text) a present, non-empty one.
	Empty   string         `yaml:"empty,omitempty" json:"empty,omitempty"`
	Noempty string         `yaml:"noempty,omitempty" json:"noempty,omitempty"`
	Extra   map[string]any `yaml:",inline" json:"-"`

	re *regexp.Regexp
}

// Compile checks the regular expression, if any, and keeps it compiled.
func (m *String) Compile() error {
	if m.Regex == "" {
		return nil
	}
	re, err := compileRegex(m.Regex)
	if err != nil {
		return fmt.Errorf("regex %q: %w", m.Regex, err)
	}
	m.re = re
	return nil
}

func compileRegex(expr string) (*regexp.Regexp, error) {
	return regexp.Compile(`^(?:` + expr + `)$`)
}

// IsZero reports whether no field is set: such a matcher matches nothing.
func (m *String) IsZero() bool {
	return m.Exact == "" && m.Prefix == "" && m.Regex == "" && m.Wildcard == "" && m.Empty == "" && m.Noempty == ""
}

// Match reports whether v (present false: absent) satisfies m.
func (m *String) Match(v string, present bool) bool {
	switch {
	case m.Exact != "" && present:
		return v == m.Exact
	case m.Prefix != "" && present:
		return strings.HasPrefix(v, m.Prefix)
	case m.Regex != "" && present:
		re := m.re
		if re == nil {
			var err error
			if re, err = compileRegex(m.Regex); err != nil {
				return false
			}
		}
		return re.MatchString(v)
	case m.Wildcard != "" && present:
		return m.Wildcard == "*" || v == m.Wildcard
	case m.Empty != "":
		return !present || v == ""
	case m.Noempty != "":
		return present && v != ""
	}
	return false
}

func (m String) String() string {
	for _, f := range []struct{ name, v string }{
		{"exact", m.Exact}, {"prefix", m.Prefix}, {"regex", m.Regex},
		{"wildcard", m.Wildcard}, {"empty", m.Empty}, {"noempty", m.Noempty},
	} {
		if f.v != "" {
			return f.name + " " + fmt.Sprintf("%q", f.v)
		}
	}
	return "nothing"
}

// Param is Dubbo's ParamMatch: one URL parameter and its matcher.
type Param struct {
	Key   string         `yaml:"key" json:"key"`
	Value String         `yaml:"value" json:"value"`
	Extra map[string]any `yaml:",inline" json:"-"`
}

// Compile checks the key and the value matcher.
func (p *Param) Compile() error {
	if p.Key == "" {
		return fmt.Errorf("match without a key; write key: <parameter> and value: {exact: ...}")
	}
	if err := p.Value.Compile(); err != nil {
		return fmt.Errorf("key %q: %w", p.Key, err)
	}
	return nil
}

// Params are the parameter matchers of one object; all must hold.
type Params []Param

// Compile compiles each.
func (ps Params) Compile() error {
	for i := range ps {
		if err := ps[i].Compile(); err != nil {
			return err
		}
	}
	return nil
}

// Match reports whether every matcher holds for the parameters param
// returns (ok false: absent).
func (ps Params) Match(param func(key string) (string, bool)) bool {
	for i := range ps {
		v, ok := param(ps[i].Key)
		if !ps[i].Value.Match(v, ok) {
			return false
		}
	}
	return true
}

// List is Dubbo's ListStringMatch: one of Oneof must match.
type List struct {
	Oneof []String       `yaml:"oneof" json:"oneof"`
	Extra map[string]any `yaml:",inline" json:"-"`
}

// Compile compiles each.
func (l *List) Compile() error {
	for i := range l.Oneof {
		if err := l.Oneof[i].Compile(); err != nil {
			return err
		}
	}
	return nil
}

// Match reports whether one of the matchers holds for v.
func (l *List) Match(v string, present bool) bool {
	for i := range l.Oneof {
		if l.Oneof[i].Match(v, present) {
			return true
		}
	}
	return false
}

// Address is Dubbo's AddressMatch, tried in this order: Cird (a CIDR
// block or an IP pattern, see IP), Wildcard ("*" and "0.0.0.0" match any
// address, else a glob with one '*'), Exact.
type Address struct {
	Wildcard string `yaml:"wildcard,omitempty" json:"wildcard,omitempty"`
	// Cird is Dubbo's spelling.
	Cird  string         `yaml:"cird,omitempty" json:"cird,omitempty"`
	Exact string         `yaml:"exact,omitempty" json:"exact,omitempty"`
	Extra map[string]any `yaml:",inline" json:"-"`
}

// Match reports whether address (a host, or host:port) matches.
func (a *Address) Match(address string) bool {
	if address == "" {
		return false
	}
	if a.Cird != "" {
		host, port := SplitHostPort(address)
		if address == a.Cird || IP(a.Cird, host, port) {
			return true
		}
	}
	if a.Wildcard != "" {
		return a.Wildcard == "*" || a.Wildcard == anyHost || Glob(a.Wildcard, address)
	}
	if a.Exact != "" {
		return address == a.Exact
	}
	return false
}

// Glob matches value against a pattern with at most one '*' as Dubbo's
// UrlUtils.isMatchGlobPattern: "*" alone, "prefix*", "*suffix", "pre*suf",
// or an exact value.
func Glob(pattern, value string) bool {
	if pattern == "*" {
		return true
	}
	i := strings.LastIndexByte(pattern, '*')
	if i < 0 {
		return pattern == value
	}
	prefix, suffix := pattern[:i], pattern[i+1:]
	return len(value) >= len(prefix)+len(suffix) && strings.HasPrefix(value, prefix) && strings.HasSuffix(value, suffix)
}

package router

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Condition is one condition rule, "<when> => <then>": calls that match the
// when-side (checked against the consumer URL and the invocation) may only
// go to providers that match the then-side (checked against each provider
// URL). An empty or "true" when-side matches every call; an empty or
// "false" then-side blocks matching calls.
type Condition struct {
	rule string
	when conditions // empty: every call
	then conditions // nil: block
	// force keeps an empty result instead of falling back to all providers.
	force   bool
	enabled bool
}

// conditions are "key = values" tests joined by '&'; all must hold.
type conditions map[string]*matchPair

// matchPair holds the values of "key = a,b" (matches) and "key != c" (mismatches).
type matchPair struct {
	matches    []string
	mismatches []string
}

// ParseCondition parses one "<when> => <then>" rule. force makes a rule that
// leaves no provider return the empty list rather than be ignored.
func ParseCondition(rule string, force bool) (*Condition, error) {
	c := &Condition{rule: rule, force: force, enabled: true}
	// Dubbo strips these prefixes: the side of each key is implied by the
	// side of the arrow.
	r := strings.NewReplacer("consumer.", "", "provider.", "").Replace(rule)
	r = strings.TrimSpace(r)
	whenRule, thenRule := "", r
	if i := strings.Index(r, "=>"); i >= 0 {
		whenRule, thenRule = strings.TrimSpace(r[:i]), strings.TrimSpace(r[i+2:])
	}
	var err error
	if whenRule != "" && whenRule != "true" {
		if c.when, err = parseConditions(whenRule); err != nil {
			return nil, fmt.Errorf("%w %q: when-side: %w", ErrInvalidRule, rule, err)
		}
	}
	if thenRule != "" && thenRule != "false" {
		if c.then, err = parseConditions(thenRule); err != nil {
			return nil, fmt.Errorf("%w %q: then-side: %w", ErrInvalidRule, rule, err)
		}
	}
	return c, nil
}

const separators = "&!=,"

// parseConditions reads "key = v1,v2 & key2 != v3" the way Dubbo's
// ConditionRouter regex does: a run of separator characters, then a run of
// other non-space characters.
func parseConditions(s string) (conditions, error) {
	conds := conditions{}
	var pair *matchPair
	var values *[]string
	for i := 0; i < len(s); {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		start := i
		for i < len(s) && strings.IndexByte(separators, s[i]) >= 0 {
			i++
		}
		sep := s[start:i]
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		cstart := i
		for i < len(s) && !isSpace(s[i]) && strings.IndexByte(separators, s[i]) < 0 {
			i++
		}
		content := s[cstart:i]
		if content == "" {
			if sep != "" {
				return nil, fmt.Errorf("%q at index %d is not followed by a key or value", sep, start)
			}
			continue
		}
		switch sep {
		case "", "&":
			if sep == "" && pair != nil {
				return nil, fmt.Errorf("%q at index %d: missing '&' before it", content, cstart)
			}
			if pair = conds[content]; pair == nil {
				pair = &matchPair{}
				conds[content] = pair
			}
			values = nil
		case "=", "!=":
			if pair == nil {
				return nil, fmt.Errorf("%q at index %d has no key before it", sep, start)
			}
			if sep == "=" {
				values = &pair.matches
			} else {
				values = &pair.mismatches
			}
			*values = append(*values, content)
		case ",":
			if values == nil {
				return nil, fmt.Errorf("',' at index %d does not follow a value", start)
			}
			*values = append(*values, content)
		default:
			return nil, fmt.Errorf("unexpected %q at index %d before %q; use '=', '!=', ',' or '&'", sep, start, content)
		}
	}
	for k, p := range conds {
		if len(p.matches) == 0 && len(p.mismatches) == 0 {
			return nil, fmt.Errorf("key %q has no '= value' or '!= value'", k)
		}
	}
	return conds, nil
}

func isSpace(b byte) bool { return b == ' ' || b == '\t' || b == '\n' || b == '\r' }

// String is the rule as written.
func (c *Condition) String() string { return c.rule }

// Route implements cluster.Router.
func (c *Condition) Route(ps []cluster.ProviderInvoker, consumer *url.URL, inv *rpc.Invocation) []cluster.ProviderInvoker {
	if !c.enabled || len(ps) == 0 || !c.matchWhen(consumer, inv) {
		return ps
	}
	if c.then == nil {
		return nil // the matching calls are blocked outright
	}
	var out []cluster.ProviderInvoker
	for _, p := range ps {
		if c.then.match(p.URL(), consumer, nil) {
			out = append(out, p)
		}
	}
	if len(out) > 0 || c.force {
		return out
	}
	return ps
}

func (c *Condition) matchWhen(consumer *url.URL, inv *rpc.Invocation) bool {
	return len(c.when) == 0 || c.when.match(consumer, nil, inv)
}

// match reports whether every condition holds for u. inv is set on the
// when-side only; param is the consumer URL on the then-side, for "$key"
// values that refer to the consumer's own parameters.
func (cs conditions) match(u, param *url.URL, inv *rpc.Invocation) bool {
	for key, pair := range cs {
		value, ok := sample(key, u, inv)
		if !ok {
			// A key absent from the sample passes only "!=" conditions.
			if len(pair.matches) > 0 {
				return false
			}
			continue
		}
		if !pair.isMatch(value, param) {
			return false
		}
	}
	return true
}

// sample is the value a condition key tests: parts of the invocation, of the
// URL, or a URL parameter; ok is false when there is none.
func sample(key string, u *url.URL, inv *rpc.Invocation) (string, bool) {
	switch {
	case (key == "method" || key == "methods") && inv != nil:
		return inv.Method, true
	case strings.HasPrefix(key, "arguments["):
		return indexed(key, "arguments[", inv, func(s string) (string, bool) {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || n >= len(inv.Args) {
				return "", false
			}
			return fmt.Sprint(inv.Args[n]), true
		})
	case strings.HasPrefix(key, "attachments["):
		return indexed(key, "attachments[", inv, func(s string) (string, bool) {
			v, ok := inv.Attachments[s]
			if !ok {
				return "", false
			}
			return fmt.Sprint(v), true
		})
	case key == "address":
		return u.Address(), true
	case key == "host":
		return u.Host(), true
	case key == "port":
		return strconv.Itoa(u.Port()), true
	case key == "protocol":
		return u.Protocol(), true
	case key == "path":
		return u.Path(), true
	}
	if u.HasParam(key) {
		return u.Param(key), true
	}
	if u.HasParam("default." + key) {
		return u.Param("default." + key), true
	}
	return "", false
}

func indexed(key, prefix string, inv *rpc.Invocation, get func(string) (string, bool)) (string, bool) {
	if inv == nil || !strings.HasSuffix(key, "]") {
		return "", false
	}
	return get(key[len(prefix) : len(key)-1])
}

// isMatch applies Dubbo's MatchPair rules: with only "=" values one must
// match, with only "!=" values none may, with both the "!=" ones win.
func (p *matchPair) isMatch(value string, param *url.URL) bool {
	for _, m := range p.mismatches {
		if globMatch(m, value, param) {
			return false
		}
	}
	if len(p.matches) == 0 {
		return true
	}
	for _, m := range p.matches {
		if globMatch(m, value, param) {
			return true
		}
	}
	return false
}

// globMatch matches value against a pattern with at most one '*' as Dubbo's
// UrlUtils.isMatchGlobPattern: "*" alone, "prefix*", "*suffix", "pre*suf".
// A pattern "$key" stands for the consumer's value of key.
func globMatch(pattern, value string, param *url.URL) bool {
	if param != nil && strings.HasPrefix(pattern, "$") {
		pattern = param.Param(pattern[1:])
	}
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

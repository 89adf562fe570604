package router

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/cluster/match"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// expr is one side of a condition, "key = v1,v2 & key2 != v3": tests that
// must all hold, each on one key. Both condition forms (v3.0's
// "<when> => <then>" and v3.1's from/to) are made of them, and both are
// matched as Java Dubbo 3.3's ConditionMatchers do.
type expr map[string]*matchPair

// matchPair holds the values of "key = a,b" (matches) and "key != c"
// (mismatches).
type matchPair struct {
	matches    []string
	mismatches []string
}

const separators = "&!=,"

// parseExpr reads an expression the way Dubbo's ROUTE_PATTERN regex does:
// a run of separator characters, then a run of other non-space characters.
// A blank expression is empty: it matches everything.
func parseExpr(s string) (expr, error) {
	conds := expr{}
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

// matchCall reports whether the call (the consumer URL and the
// invocation) satisfies every test: a when-side or a from.
func (e expr) matchCall(consumer *url.URL, inv *rpc.Invocation) bool {
	for key, pair := range e {
		value, ok := sample(key, consumer, inv)
		if !ok || !pair.isMatch(value, nil, true) {
			return false
		}
	}
	return true
}

// matchProvider reports whether provider satisfies every test: a then-side
// or a to. "$key" values stand for the consumer's own value of key.
func (e expr) matchProvider(provider, consumer *url.URL) bool {
	for key, pair := range e {
		value, ok := sample(key, provider, nil)
		if !ok || !pair.isMatch(value, consumer, false) {
			return false
		}
	}
	return true
}

// filter keeps the providers that satisfy e.
func (e expr) filter(ps []cluster.ProviderInvoker, consumer *url.URL) []cluster.ProviderInvoker {
	var out []cluster.ProviderInvoker
	for _, p := range ps {
		if e.matchProvider(p.URL(), consumer) {
			out = append(out, p)
		}
	}
	return out
}

// notFound is the value of an argument a call does not have, as Java's
// ArgumentConditionMatcher reports it: it passes "!=" tests, not "=".
const notFound = "dubbo_internal_not_found_argument_condition_value"

// sample is the value a key tests: the method or an argument or an
// attachment of the invocation, a part of the URL, or a URL parameter; ok
// is false when there is none, and a key without a value fails its test
// whatever it is (Java 3's AbstractConditionMatcher).
func sample(key string, u *url.URL, inv *rpc.Invocation) (string, bool) {
	switch {
	case (key == "method" || key == "methods") && inv != nil:
		return cluster.MethodName(inv), true
	case strings.HasPrefix(key, "arguments"):
		if inv == nil {
			return notFound, true
		}
		n, ok := index(key, "arguments")
		i, err := strconv.Atoi(n)
		args := cluster.MethodArgs(inv)
		if !ok || err != nil || i < 0 || i >= len(args) {
			return notFound, true
		}
		if args[i] == nil {
			return "null", true // Java's String.valueOf
		}
		return fmt.Sprint(args[i]), true
	case strings.HasPrefix(key, "attachments"):
		k, ok := index(key, "attachments")
		if !ok || k == "" || inv == nil {
			return notFound, true
		}
		v, ok := inv.Attachments[k]
		if !ok || v == nil {
			return "", false
		}
		return fmt.Sprint(v), true
	case key == "address":
		return u.Address(), true
	case key == "host":
		return u.Host(), true
	case key == "port":
		if u.Port() == 0 {
			return "", false
		}
		return strconv.Itoa(u.Port()), true
	case key == "protocol":
		return u.Protocol(), true
	case key == "path":
		return u.Path(), true
	}
	if u.HasParam(key) {
		return u.Param(key), true
	}
	return "", false
}

// index reads the bracketed part of "arguments[0]" or
// "attachments[user]"; what follows a '.' is ignored, as in Java.
func index(key, prefix string) (string, bool) {
	key, _, _ = strings.Cut(key, ".")
	rest, ok := strings.CutPrefix(key, prefix+"[")
	if !ok || !strings.HasSuffix(rest, "]") {
		return "", false
	}
	return rest[:len(rest)-1], true
}

// isMatch applies Dubbo's rules: with only "=" values one must match,
// with only "!=" values none may, with both the "!=" ones win. when says
// which side the value is on (a range that cannot be read counts as a
// match on the provider side only, as in Java's RangeValuePattern).
func (p *matchPair) isMatch(value string, consumer *url.URL, when bool) bool {
	for _, m := range p.mismatches {
		if patternMatch(m, value, consumer, when) {
			return false
		}
	}
	if len(p.matches) == 0 {
		return true
	}
	for _, m := range p.matches {
		if patternMatch(m, value, consumer, when) {
			return true
		}
	}
	return false
}

// patternMatch matches one value: "lo~hi" (an integer range, either bound
// may be left out) or a glob with at most one '*'; "$key" stands for the
// consumer's value of key.
func patternMatch(pattern, value string, consumer *url.URL, when bool) bool {
	if strings.Contains(pattern, "~") {
		return rangeMatch(pattern, value, !when)
	}
	if consumer != nil && strings.HasPrefix(pattern, "$") {
		pattern = rawParam(consumer, pattern[1:])
	}
	return match.Glob(pattern, value)
}

// rawParam is Java's URL.getRawParameter: the parts of the URL by name,
// else the parameter.
func rawParam(u *url.URL, key string) string {
	switch key {
	case "protocol":
		return u.Protocol()
	case "host":
		return u.Host()
	case "port":
		return strconv.Itoa(u.Port())
	case "path":
		return u.Path()
	}
	return u.Param(key)
}

func rangeMatch(pattern, value string, unreadable bool) bool {
	// As Java: split("~") drops a trailing empty bound, numbers that are
	// not digits read as 0.
	lo, hi, _ := strings.Cut(pattern, "~")
	hi, _, _ = strings.Cut(hi, "~")
	if hi == "" {
		return unreadable
	}
	n, err := javaInt(value)
	if err != nil {
		return unreadable
	}
	h, err := javaInt(hi)
	if err != nil {
		return unreadable
	}
	if n > h {
		return false
	}
	if lo == "" {
		return true
	}
	l, err := javaInt(lo)
	if err != nil {
		return unreadable
	}
	return n >= l
}

// javaInt is Dubbo's StringUtils.parseInteger: digits only, else 0.
func javaInt(s string) (int32, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err
}

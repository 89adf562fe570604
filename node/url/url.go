// Package url is the Dubbo URL: the one value that describes a registry, a
// provider, a consumer, a route or an override everywhere in Dubbo.
//
// A URL is parsed with [Parse] from
//
//	protocol://[user[:password]@]host[:port][,host[:port]...][/path][?key=value&...]
//
// and printed by [URL.String] exactly as Java's URL.toFullString does
// (parameters sorted by key, values raw), so that both sides of the registry
// agree on node names. [URL.Encode] and [Decode] turn a URL into a ZooKeeper
// node name and back. [URL.ServiceKey] and [URL.ColonSeparatedKey] give the
// two service keys Dubbo uses: the exporter key a provider routes calls by,
// and the config-center rule key; the functions [ServiceKey],
// [ParseServiceKey] and [ColonSeparatedKey] build and split them from
// interface, version and group, always in that order. [URL.Redacted]
// prints a URL with its secrets hidden, for logs, errors and pages.
package url

import (
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// ErrInvalid is the category of every Parse and Decode error.
var ErrInvalid = errors.New("invalid dubbo url")

// Well-known parameter keys (PROTOCOLS.md C.3).
const (
	KeyInterface = "interface"
	KeyVersion   = "version"
	KeyGroup     = "group"
	KeyCategory  = "category"
	KeyTimestamp = "timestamp"
	KeyPID       = "pid"
	KeyBackup    = "backup"
)

// volatileKeys change on every restart of the same provider; consumers ignore
// them when deciding whether a provider URL changed (Java strips them too).
var volatileKeys = []string{KeyTimestamp, KeyPID}

// URL is a parsed Dubbo URL. The zero value is an empty URL; use Parse or New.
// A URL is not safe for concurrent mutation (SetParam); share clones instead.
type URL struct {
	protocol string
	username string
	password string
	hosts    []hostPort // at least one entry after Parse; more for registry clusters
	path     string
	params   map[string]string
}

type hostPort struct {
	host string
	port int // 0 = none
}

func (h hostPort) String() string {
	host := h.host
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if h.port == 0 {
		return host
	}
	return host + ":" + strconv.Itoa(h.port)
}

// New builds a URL from its parts; params may be nil.
func New(protocol, host string, port int, path string, params map[string]string) *URL {
	u := &URL{protocol: protocol, hosts: []hostPort{{host, port}}, path: strings.TrimPrefix(path, "/")}
	for k, v := range params {
		u.SetParam(k, v)
	}
	return u
}

// Parse parses a Dubbo URL. Like Java's URL.valueOf it does not unescape
// anything: parameter values stay as written (see ParamUnescaped). Its
// errors quote s with its secrets hidden, as Redacted hides them.
func Parse(s string) (*URL, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, fmt.Errorf("%w: empty string", ErrInvalid)
	}
	u := &URL{}
	rest := s
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		u.parseQuery(rest[i+1:])
		rest = rest[:i]
	}
	i := strings.Index(rest, "://")
	if i <= 0 {
		return nil, fmt.Errorf("%w %q: missing protocol (want protocol://host...)", ErrInvalid, redactRaw(s))
	}
	u.protocol, rest = rest[:i], rest[i+3:]
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		u.path, rest = rest[i+1:], rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		user := rest[:i]
		rest = rest[i+1:]
		if j := strings.IndexByte(user, ':'); j >= 0 {
			u.username, u.password = user[:j], user[j+1:]
		} else {
			u.username = user
		}
	}
	for _, item := range strings.Split(rest, ",") {
		hp, err := parseHostPort(strings.TrimSpace(item))
		if err != nil {
			return nil, fmt.Errorf("%w %q: %w", ErrInvalid, redactRaw(s), err)
		}
		u.hosts = append(u.hosts, hp)
	}
	if len(u.hosts) > 1 {
		for _, hp := range u.hosts {
			if hp.host == "" {
				return nil, fmt.Errorf("%w %q: empty host in address list", ErrInvalid, redactRaw(s))
			}
		}
	}
	return u, nil
}

// MustParse is Parse for constants in tests and tables; it panics on error.
func MustParse(s string) *URL {
	u, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func (u *URL) parseQuery(q string) {
	for _, part := range strings.Split(q, "&") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			v = k // Java: a bare key maps to itself
		}
		if k == "" {
			continue // Java never prints empty keys
		}
		if u.params == nil {
			u.params = make(map[string]string)
		}
		u.params[k] = v
	}
}

func parseHostPort(s string) (hostPort, error) {
	hp, err := splitHostPort(s)
	if err == nil && strings.ContainsFunc(hp.host, unicode.IsSpace) {
		return hostPort{}, fmt.Errorf("white space in host %q", hp.host)
	}
	return hp, err
}

func splitHostPort(s string) (hostPort, error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return hostPort{}, fmt.Errorf("unclosed '[' in host %q", s)
		}
		host, rest := s[1:end], s[end+1:]
		if rest == "" {
			return hostPort{host: host}, nil
		}
		if rest[0] != ':' {
			return hostPort{}, fmt.Errorf("unexpected %q after ']' in host %q", rest, s)
		}
		port, err := parsePort(rest[1:])
		return hostPort{host, port}, err
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return hostPort{host: s}, nil
	}
	if strings.Count(s, ":") > 1 {
		if net.ParseIP(s) == nil {
			return hostPort{}, fmt.Errorf("bad host %q (write IPv6 addresses as [addr]:port)", s)
		}
		return hostPort{host: s}, nil // bare IPv6 address without a port
	}
	port, err := parsePort(s[i+1:])
	return hostPort{s[:i], port}, err
}

func parsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("bad port %q", s)
	}
	p, _ := strconv.Atoi(s)
	if p > 65535 {
		return 0, fmt.Errorf("port %d out of range", p)
	}
	return p, nil
}

// Protocol is the scheme: dubbo, zookeeper, consumer, override, condition, empty...
func (u *URL) Protocol() string { return u.protocol }

// Username is the user before '@', if any.
func (u *URL) Username() string { return u.username }

// Password is the password after "user:", if any.
func (u *URL) Password() string { return u.password }

// Host is the (first) host, without IPv6 brackets.
func (u *URL) Host() string {
	if len(u.hosts) == 0 {
		return ""
	}
	return u.hosts[0].host
}

// Port is the (first) port, 0 if none was given.
func (u *URL) Port() int {
	if len(u.hosts) == 0 {
		return 0
	}
	return u.hosts[0].port
}

// Address is "host:port" of the first host ("[::1]:2181" for IPv6), or the
// host alone when there is no port, as Java's getAddress.
func (u *URL) Address() string {
	if len(u.hosts) == 0 {
		return ""
	}
	if u.hosts[0].port == 0 {
		return u.hosts[0].host
	}
	return net.JoinHostPort(u.hosts[0].host, strconv.Itoa(u.hosts[0].port))
}

// Addresses lists every address of a registry cluster: the comma-separated
// hosts, then those of the "backup" parameter. Hosts without a port get
// defaultPort when it is not 0.
func (u *URL) Addresses(defaultPort int) []string {
	all := append([]hostPort(nil), u.hosts...)
	if b := u.Param(KeyBackup); b != "" {
		for _, item := range strings.Split(b, ",") {
			if hp, err := parseHostPort(strings.TrimSpace(item)); err == nil && hp.host != "" {
				all = append(all, hp)
			}
		}
	}
	out := make([]string, 0, len(all))
	for _, hp := range all {
		if hp.port == 0 {
			hp.port = defaultPort
		}
		if hp.port == 0 {
			out = append(out, hp.host)
			continue
		}
		out = append(out, net.JoinHostPort(hp.host, strconv.Itoa(hp.port)))
	}
	return out
}

// Path is the path without its leading '/', normally the interface name.
func (u *URL) Path() string { return u.path }

// Param returns the raw value of key, "" if absent.
func (u *URL) Param(key string) string { return u.params[key] }

// HasParam reports whether key is present, even with an empty value.
func (u *URL) HasParam(key string) bool {
	_, ok := u.params[key]
	return ok
}

// ParamOr returns the value of key, or def when it is absent or empty.
func (u *URL) ParamOr(key, def string) string {
	if v := u.params[key]; v != "" {
		return v
	}
	return def
}

// IntParam returns key as an integer, def when absent or not a number.
func (u *URL) IntParam(key string, def int) int {
	if n, err := strconv.Atoi(strings.TrimSpace(u.params[key])); err == nil {
		return n
	}
	return def
}

// BoolParam returns key as a boolean ("true"/"false", any case), def otherwise.
func (u *URL) BoolParam(key string, def bool) bool {
	switch strings.ToLower(strings.TrimSpace(u.params[key])) {
	case "true":
		return true
	case "false":
		return false
	}
	return def
}

// MillisParam reads key as a count of milliseconds, Dubbo's unit for every
// duration parameter (timeout, heartbeat, delay...); def when absent or bad.
func (u *URL) MillisParam(key string, def time.Duration) time.Duration {
	n, err := strconv.ParseInt(strings.TrimSpace(u.params[key]), 10, 64)
	if err != nil || n < 0 {
		return def
	}
	return time.Duration(n) * time.Millisecond
}

// Params returns a copy of all parameters.
func (u *URL) Params() map[string]string {
	out := make(map[string]string, len(u.params))
	for k, v := range u.params {
		out[k] = v
	}
	return out
}

// SetParam sets key to value in place; an empty key is ignored, as Java never
// prints one.
func (u *URL) SetParam(key, value string) {
	if key == "" {
		return
	}
	if u.params == nil {
		u.params = make(map[string]string)
	}
	u.params[key] = value
}

// WithoutParams returns a copy of u without the given keys.
func (u *URL) WithoutParams(keys ...string) *URL {
	c := u.Clone()
	for _, k := range keys {
		delete(c.params, k)
	}
	return c
}

// Clone returns a deep copy.
func (u *URL) Clone() *URL {
	c := *u
	c.hosts = append([]hostPort(nil), u.hosts...)
	c.params = u.Params()
	return &c
}

// String renders the URL as Java's toFullString: parameters sorted by key,
// values raw (not escaped).
func (u *URL) String() string {
	var b strings.Builder
	b.WriteString(u.protocol)
	b.WriteString("://")
	if u.username != "" || u.password != "" {
		b.WriteString(u.username)
		if u.password != "" {
			b.WriteByte(':')
			b.WriteString(u.password)
		}
		b.WriteByte('@')
	}
	for i, hp := range u.hosts {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(hp.String())
	}
	if u.path != "" {
		b.WriteByte('/')
		b.WriteString(u.path)
	}
	if len(u.params) > 0 {
		keys := make([]string, 0, len(u.params))
		for k := range u.params {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for i, k := range keys {
			if i == 0 {
				b.WriteByte('?')
			} else {
				b.WriteByte('&')
			}
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(u.params[k])
		}
	}
	return b.String()
}

// Equal reports whether u and v have the same parts and parameters.
func (u *URL) Equal(v *URL) bool {
	return u.equal(v, nil)
}

// EqualIgnoringVolatile is Equal that ignores timestamp and pid: the same provider
// re-registered after a restart compares equal.
func (u *URL) EqualIgnoringVolatile(v *URL) bool {
	return u.equal(v, volatileKeys)
}

func (u *URL) equal(v *URL, ignore []string) bool {
	if u == nil || v == nil {
		return u == v
	}
	if u.protocol != v.protocol || u.username != v.username || u.password != v.password ||
		u.path != v.path || len(u.hosts) != len(v.hosts) {
		return false
	}
	for i := range u.hosts {
		if u.hosts[i] != v.hosts[i] {
			return false
		}
	}
	skip := func(k string) bool {
		for _, i := range ignore {
			if i == k {
				return true
			}
		}
		return false
	}
	n := 0
	for k, a := range u.params {
		if skip(k) {
			continue
		}
		n++
		if b, ok := v.params[k]; !ok || a != b {
			return false
		}
	}
	for k := range v.params {
		if !skip(k) {
			n--
		}
	}
	return n == 0
}

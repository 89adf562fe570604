package match

import (
	"net/netip"
	"strconv"
	"strings"
)

// anyHost names every host.
const anyHost = "0.0.0.0"

// IP reports whether a provider at host:port is named by pattern, as
// Dubbo's NetUtils.matchIpExpression (and the "0.0.0.0:port" form tag
// rules accept): an IP or host name, optionally with ":port" (none or "*"
// matches any port); the host part may be "*", "0.0.0.0" (any host), a
// CIDR block, or an IPv4 address whose segments are "*" or ranges
// ("192.168.1.*", "10.0.0.10-20").
func IP(pattern string, host string, port int) bool {
	phost, pport := SplitHostPort(strings.TrimSpace(pattern))
	if pport != 0 && pport != port {
		return false
	}
	switch {
	case phost == "*" || phost == anyHost || phost == "*.*.*.*":
		return true
	case phost == host:
		return true
	case strings.Contains(phost, "/"):
		prefix, err := netip.ParsePrefix(phost)
		if err != nil {
			return false
		}
		ip, err := netip.ParseAddr(host)
		return err == nil && prefix.Contains(ip.Unmap())
	case strings.ContainsAny(phost, "*-"):
		ps, hs := strings.Split(phost, "."), strings.Split(host, ".")
		if len(ps) != 4 || len(hs) != 4 {
			return false
		}
		for i := range ps {
			if !segmentMatch(ps[i], hs[i]) {
				return false
			}
		}
		return true
	}
	return false
}

// segmentMatch matches one IPv4 segment against "*", "a-b" or a number.
func segmentMatch(p, h string) bool {
	if p == "*" || p == h {
		return true
	}
	n, err := strconv.Atoi(h)
	if err != nil {
		return false
	}
	if lo, hi, ok := strings.Cut(p, "-"); ok {
		l, err1 := strconv.Atoi(lo)
		u, err2 := strconv.Atoi(hi)
		return err1 == nil && err2 == nil && l <= n && n <= u
	}
	m, err := strconv.Atoi(p)
	return err == nil && m == n
}

// SplitHostPort splits "host:port", "[v6]:port", a bare IPv6 address and
// a bare host; a port of "*" or none is 0.
func SplitHostPort(p string) (host string, port int) {
	var ps string
	switch {
	case strings.HasPrefix(p, "["):
		end := strings.IndexByte(p, ']')
		if end < 0 {
			return p, 0
		}
		host, ps = p[1:end], strings.TrimPrefix(p[end+1:], ":")
	case strings.Count(p, ":") == 1:
		host, ps, _ = strings.Cut(p, ":")
	default:
		return p, 0
	}
	port, _ = strconv.Atoi(ps)
	return host, port
}

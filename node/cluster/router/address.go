package router

import (
	"net/netip"
	"strconv"
	"strings"
)

// addressMatches reports whether a provider at host:port is named by one of
// the address patterns of a tag rule. A pattern is an IP or host, optionally
// with ":port" (a port of "*" or none matches any port); the host part may
// be "*", "0.0.0.0" (any host), a CIDR block, or an IPv4 address with '*'
// segments (192.168.1.*).
func addressMatches(patterns []string, host string, port int) bool {
	for _, p := range patterns {
		if addressMatch(strings.TrimSpace(p), host, port) {
			return true
		}
	}
	return false
}

func addressMatch(pattern, host string, port int) bool {
	phost, pport := splitPattern(pattern)
	if pport != "" && pport != "*" && pport != strconv.Itoa(port) {
		return false
	}
	switch {
	case phost == "*" || phost == "0.0.0.0":
		return true
	case phost == host:
		return true
	case strings.Contains(phost, "/"):
		prefix, err := netip.ParsePrefix(phost)
		if err != nil {
			return false
		}
		ip, err := netip.ParseAddr(host)
		return err == nil && prefix.Contains(ip)
	case strings.Contains(phost, "*"):
		ps, hs := strings.Split(phost, "."), strings.Split(host, ".")
		if len(ps) != len(hs) {
			return false
		}
		for i := range ps {
			if ps[i] != "*" && ps[i] != hs[i] {
				return false
			}
		}
		return true
	}
	return false
}

// splitPattern splits "host:port", "[v6]:port" and a bare IPv6 address.
func splitPattern(p string) (host, port string) {
	if strings.HasPrefix(p, "[") {
		if end := strings.IndexByte(p, ']'); end > 0 {
			return p[1:end], strings.TrimPrefix(p[end+1:], ":")
		}
	}
	if strings.Count(p, ":") == 1 {
		h, port, _ := strings.Cut(p, ":")
		return h, port
	}
	return p, ""
}

package gateway

import (
	"net"
	"strings"
	"testing"
)

// FuzzHostPolicy feeds any Host and Origin header to the checks that
// guard the gateway: they must not panic, and what they accept must name
// the listen port (or a configured name), never a foreign name.
func FuzzHostPolicy(f *testing.F) {
	f.Add("127.0.0.1:8081", "127.0.0.1:8081", "http://127.0.0.1:8081")
	f.Add("0.0.0.0:8081", "[::1]:8081", "null")
	f.Add("10.1.2.3:8081", "attacker.example:8081", "https://gw.example")
	f.Add(":8081", "localhost", "http://localhost:8081/path")
	f.Fuzz(func(t *testing.T, listen, host, origin string) {
		p := newHostPolicy(listen, []string{"gw.example"})
		ok := p.allows(host, "")
		_ = p.allowsOrigin(origin)
		if !ok {
			return
		}
		h, port, err := net.SplitHostPort(host)
		if err != nil {
			h, port = strings.Trim(host, "[]"), "80"
		}
		h = strings.ToLower(h)
		if h == "gw.example" {
			return
		}
		if port != p.port {
			t.Fatalf("listen %q allowed Host %q on another port", listen, host)
		}
		if net.ParseIP(h) == nil && h != "localhost" && h != p.name {
			t.Fatalf("listen %q allowed Host %q, a foreign name", listen, host)
		}
	})
}

package consumer

import (
	"strings"
	"testing"
	"unicode"
)

// FuzzCheckService: no name panics the check, and what it accepts can go
// into a znode name and a log line: no path separator, no space or
// control character, no empty part.
func FuzzCheckService(f *testing.F) {
	f.Add("org.example.Greeter", "1.0.0", "", "sayHello")
	f.Add("org.example.Outer$Inner", "*", "a,b", "$invoke")
	f.Add("com..x", "1/2", "a:b", "m-1")
	f.Add("com.example.class", "", "", "")
	f.Fuzz(func(t *testing.T, iface, version, group, method string) {
		if CheckService(iface, version, group, method) != nil {
			return
		}
		for _, s := range []string{iface, version, group, method} {
			if strings.ContainsAny(s, "/:&=?%") || strings.IndexFunc(s, func(r rune) bool {
				return unicode.IsSpace(r) || unicode.IsControl(r)
			}) >= 0 {
				t.Fatalf("accepted %q %q %q %q", iface, version, group, method)
			}
		}
		for _, part := range strings.Split(iface, ".") {
			if part == "" {
				t.Fatalf("accepted %q with an empty part", iface)
			}
		}
	})
}

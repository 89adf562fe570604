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

// FuzzReferenceSettings: no url, parameter or name panics Validate, and
// what it accepts works: every direct url is a dubbo://host:port, the
// router key names routers that exist, and the consumer URL keeps the
// reference's interface whatever the parameters say.
func FuzzReferenceSettings(f *testing.F) {
	f.Add("dubbo://127.0.0.1:20880;dubbo://127.0.0.1:20881", "forks", "3", "-tag", "roundrobin")
	f.Add("dubbo://[::1]:20880", "hash.arguments", "0, 1", "-default,tag", "")
	f.Add(";;dubbo://a:1;", "sticky", "TRUE", "app,-service", "p2c")
	f.Add("http://x:1", "interface", "evil", "-tga", "roundrobbin")
	f.Fuzz(func(t *testing.T, u, key, value, routers, lb string) {
		rc := ReferenceConfig{Interface: "org.example.Greeter", URL: u,
			Settings: Settings{LoadBalance: lb, Parameters: map[string]string{key: value, keyRouter: routers}}}
		if (Config{References: []ReferenceConfig{rc}}).Validate() != nil {
			return
		}
		if u != "" {
			us, err := directURLs(u)
			if err != nil || len(us) == 0 {
				t.Fatalf("accepted url %q: %v", u, err)
			}
			for _, d := range us {
				if d.Protocol() != "dubbo" || d.Port() == 0 {
					t.Fatalf("accepted url %q with %s", u, d)
				}
			}
		}
		c := &Consumer{cfg: Config{Application: "fuzz"}, host: "127.0.0.1"}
		cu := c.consumerURL(rc)
		if cu.Param("interface") != rc.Interface || cu.Param("side") != "consumer" {
			t.Fatalf("parameter %q=%q changed the consumer URL's identity: %s", key, value, cu)
		}
		if routers != "" && key != keyRouter {
			if cu.Param(keyRouter) != routers {
				t.Fatalf("router %q not in the consumer URL %s", routers, cu)
			}
		}
	})
}

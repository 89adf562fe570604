package url

import "testing"

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		javaProvider, javaConsumer, greeterProvider, "zookeeper://a:2181,b:2181,c:2181",
		"zookeeper://[::1]:2181", "dubbo://u:p@h:1/p?k", "empty://h/p?category=routers",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := Parse(s)
		if err != nil {
			return
		}
		again, err := Parse(u.String())
		if err != nil {
			t.Fatalf("String() %q of %q does not re-parse: %v", u.String(), s, err)
		}
		if !again.Equal(u) {
			t.Fatalf("round trip of %q: %q != %q", s, again.String(), u.String())
		}
		if d, err := Decode(u.Encode()); err != nil || !d.Equal(u) {
			t.Fatalf("node name round trip of %q: %v", s, err)
		}
	})
}

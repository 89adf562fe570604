package metadata

import (
	"testing"

	"github.com/dubbo-lab/dubbo/node/url"
)

// Decoded getMetadataInfo results as our hessian decoder yields them:
// objects of unregistered classes are string-keyed maps with "_class",
// Java maps are any-keyed.
func TestInfoFromValue(t *testing.T) {
	tests := []struct {
		name  string
		value any
		port  int
		group string
	}{
		{"java", map[string]any{
			"_class": "org.apache.dubbo.metadata.MetadataInfo", "app": "demo", "revision": "r1",
			"services": map[any]any{"ops/org.example.Greeter:1.0.0:dubbo": map[string]any{
				"_class": "org.apache.dubbo.metadata.MetadataInfo$ServiceInfo",
				"name":   "org.example.Greeter", "group": "ops", "version": "1.0.0", "protocol": "dubbo",
				"port": int32(20880), "path": "org.example.Greeter",
				"params": map[any]any{"methods": "sayHello", "side": "provider"},
			}},
		}, 20880, "ops"},
		{"dubbo-go", map[string]any{
			"_class": "org.apache.dubbo.metadata.MetadataInfo", "app": "demo", "revision": "r1", "tag": "",
			"services": map[any]any{"org.example.Greeter:1.0.0:dubbo": map[string]any{
				"_class": "org.apache.dubbo.metadata.MetadataInfo$ServiceInfo",
				"name":   "org.example.Greeter", "group": nil, "version": "1.0.0", "protocol": "dubbo",
				"port": int64(20000), "path": "org.example.Greeter",
				"params": map[any]any{"methods": "sayHello", "side": "provider"},
			}},
		}, 20000, ""},
		{"plain maps", map[any]any{
			"app": "demo", "revision": "r1",
			"services": map[string]any{"org.example.Greeter:1.0.0:dubbo": map[any]any{
				"name": "org.example.Greeter", "version": "1.0.0", "protocol": "dubbo",
				"port": float64(1234), "path": "org.example.Greeter",
				"params": map[string]string{"methods": "sayHello", "side": "provider"},
			}},
		}, 1234, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := InfoFromValue(tt.value)
			if err != nil {
				t.Fatal(err)
			}
			if info.App != "demo" || info.Revision != "r1" || len(info.Services) != 1 {
				t.Fatalf("info %+v", info)
			}
			for _, s := range info.Services {
				if s.Name != "org.example.Greeter" || s.Version != "1.0.0" || s.Group != tt.group || s.Port != tt.port ||
					s.Protocol != "dubbo" || s.Params["methods"] != "sayHello" || len(s.Params) != 2 {
					t.Errorf("service %+v", s)
				}
				if !s.Serves("org.example.Greeter", tt.group, "1.0.0") || s.Serves("org.example.Greeter", "other", "1.0.0") ||
					s.Serves("org.example.Greeter", tt.group, "2.0.0") {
					t.Errorf("Serves wrong for %+v", s)
				}
			}
		})
	}
	for _, bad := range []any{nil, "x", map[string]any{"services": "x"}, map[string]any{"services": map[string]any{"k": 1}}} {
		if _, err := InfoFromValue(bad); err == nil {
			t.Errorf("InfoFromValue(%#v) accepted", bad)
		}
	}
}

// ProviderURL turns what NewServiceInfo kept back into a usable provider
// URL, and fills interface, version and group for dubbo-go's short params.
func TestServiceInfoProviderURL(t *testing.T) {
	p := url.MustParse("dubbo://127.0.0.1:20880/org.example.Greeter?application=demo&group=ops&interface=org.example.Greeter&methods=add,sayHello&pid=1&timestamp=2&version=1.0.0")
	u := NewServiceInfo(p).ProviderURL("demo", "10.0.0.1", 20881)
	want := url.MustParse("dubbo://10.0.0.1:20881/org.example.Greeter?application=demo&group=ops&interface=org.example.Greeter&methods=add,sayHello&version=1.0.0")
	if !u.Equal(want) {
		t.Errorf("round trip: %s, want %s", u, want)
	}
	s := &ServiceInfo{Name: "org.example.Greeter", Version: "1.0.0", Params: map[string]string{"methods": "sayHello"}}
	u = s.ProviderURL("go-app", "10.0.0.2", 20000)
	want = url.MustParse("dubbo://10.0.0.2:20000/org.example.Greeter?application=go-app&interface=org.example.Greeter&methods=sayHello&version=1.0.0")
	if !u.Equal(want) {
		t.Errorf("dubbo-go: %s, want %s", u, want)
	}
}

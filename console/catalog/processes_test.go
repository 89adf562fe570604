package catalog

import (
	"fmt"
	neturl "net/url"
	"reflect"
	"testing"

	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
)

// The registry's processes: providers by host:port from provider nodes
// and application instances, consumers by host; and every application
// any of them names, the count agreeing with the list.
func TestProcessesAndApplications(t *testing.T) {
	zktest.Both(t, func(t *testing.T, addr string) {
		_, mk := nodeMaker(t, addr)
		for _, p := range []string{"/dubbo", "/dubbo/mapping", "/services", "/services/shop",
			"/dubbo/com.example.A", "/dubbo/com.example.A/providers", "/dubbo/com.example.A/consumers",
			"/dubbo/com.example.B", "/dubbo/com.example.B/providers"} {
			mk(p, nil)
		}
		node := func(iface, u string) {
			cat := "providers"
			if u[:9] == "consumer:" {
				cat = "consumers"
			}
			mk(fmt.Sprintf("/dubbo/%s/%s/%s", iface, cat, neturl.QueryEscape(u)), nil)
		}
		node("com.example.A", "dubbo://10.1.0.1:20880/com.example.A?application=shop&interface=com.example.A&side=provider")
		node("com.example.B", "dubbo://10.1.0.1:20880/com.example.B?application=shop&interface=com.example.B&side=provider")
		node("com.example.B", "dubbo://10.1.0.2:20880/com.example.B?application=stock&interface=com.example.B&side=provider")
		node("com.example.A", "consumer://10.2.0.1/com.example.A?application=web&interface=com.example.A&side=consumer")
		node("com.example.A", "consumer://10.2.0.1/com.example.A?application=admin&interface=com.example.A&side=consumer")
		mk("/dubbo/mapping/com.example.C", []byte("shop"))
		mk("/services/shop/10.1.0.1:20880", instanceData(20880))
		mk("/services/shop/10.1.0.1:30000", instanceData(30000))

		c := loadedCatalog(t, addr)
		want := Processes{
			Providers: []Process{
				{Address: "10.1.0.1:20880", Applications: []string{"shop"}, Services: []string{"com.example.A", "com.example.B", "com.example.C"}},
				{Address: "10.1.0.1:30000", Applications: []string{"shop"}, Services: []string{"com.example.C"}},
				{Address: "10.1.0.2:20880", Applications: []string{"stock"}, Services: []string{"com.example.B"}},
			},
			Consumers: []Process{{Address: "10.2.0.1", Applications: []string{"admin", "web"}, Services: []string{"com.example.A"}}},
		}
		if got := c.Processes(); !reflect.DeepEqual(got, want) {
			t.Errorf("processes\n%+v\nwant\n%+v", got, want)
		}
		apps := c.Applications()
		var names []string
		for _, a := range apps {
			names = append(names, a.Name)
		}
		if !reflect.DeepEqual(names, []string{"admin", "shop", "stock", "web"}) || c.Counts().Applications != len(apps) {
			t.Errorf("applications %v, counted %d", names, c.Counts().Applications)
		}
		ifaces := map[string]bool{}
		for _, s := range c.Services() {
			ifaces[s.Interface] = true
		}
		if len(ifaces) != 3 || c.Counts().Services != len(ifaces) {
			t.Errorf("services list %v, counted %d", ifaces, c.Counts().Services)
		}
		shop, _ := c.Application("shop")
		web, _ := c.Application("web")
		if !reflect.DeepEqual(shop.Services, []string{"com.example.A", "com.example.B", "com.example.C"}) || len(shop.Instances) != 2 ||
			!reflect.DeepEqual(web.References, []string{"com.example.A"}) || len(web.Services) != 0 {
			t.Errorf("shop %+v, web %+v", shop, web)
		}

		d := c.Dependencies()
		wantRefs := []Reference{{Application: "admin", Interface: "com.example.A"}, {Application: "web", Interface: "com.example.A"}}
		if !reflect.DeepEqual(d.References, wantRefs) {
			t.Errorf("references %+v, want %+v", d.References, wantRefs)
		}
		for _, p := range []struct {
			iface, version string
			want           []string
		}{
			{"com.example.A", "", []string{"shop"}},
			{"com.example.B", "", []string{"shop", "stock"}},
			{"com.example.B", "1.0.0", []string{}},
			{"com.example.C", "1.0.0", []string{"shop"}}, // by the mapping, whatever the version
		} {
			if got := d.ProvidersOf(p.iface, p.version, ""); !reflect.DeepEqual(got, p.want) {
				t.Errorf("providers of %s %s: %v, want %v", p.iface, p.version, got, p.want)
			}
		}
	})
}

package console_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

const appGreeter = "org.example.AppGreeter"

// startAppLevelProvider starts a provider of org.example.AppGreeter 2.0.0
// (the example Greeter under another name) that registers its application
// instance only, as dubbo-go does by default; its calls are counted under
// its address.
func startAppLevelProvider(t *testing.T, e *env, counts *served) string {
	t.Helper()
	p, err := provider.Start(testCtx(t), provider.Config{Application: "app-greeter", Registry: e.Registry, RegisterMode: provider.RegisterInstance,
		Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}}, provider.Options{Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	addr := p.Addr()
	svc := providertest.Greeter(func(*rpc.Invocation) { counts.add(addr) })
	svc.Interface, svc.Version = appGreeter, "2.0.0"
	svc.Params = map[string]string{"warmup": "0"}
	if err := p.Export(testCtx(t), svc); err != nil {
		t.Fatal(err)
	}
	return addr
}

// A service whose providers register their application instance only
// gets what an interface-level one gets: its providers listed (from their
// instances' metadata) with its version, weight and enable controls that
// work, its methods, test calls, and its addresses in the tag form.
func TestApplicationLevelProviders(t *testing.T) {
	e := startSystem(t, envOptions{noLoad: true})
	counts := &served{n: map[string]int64{}}
	a, b := startAppLevelProvider(t, e, counts), startAppLevelProvider(t, e, counts)
	type prov struct {
		Address, Version, Registration string
		Weight                         int
		Enabled, Withdrawn             bool
	}
	providers := func() map[string]prov {
		var ps []prov
		findJSON(t, e, "/api/v1/services/"+appGreeter+"/providers", &ps) // 404 until the console sees one
		out := map[string]prov{}
		for _, p := range ps {
			out[p.Address] = p
		}
		return out
	}
	waitFor(t, "both application-level providers in the console", func() bool {
		ps := providers()
		return ps[a].Registration == "application" && ps[b].Registration == "application" && ps[a].Version == "2.0.0"
	})

	var svc struct {
		Services []struct {
			Version      string
			Providers    int
			Registration string
		}
		Methods []struct{ Name, Version, Signature string }
	}
	getJSON(t, e, "/api/v1/services/"+appGreeter, &svc)
	if len(svc.Services) != 1 || svc.Services[0].Version != "2.0.0" || svc.Services[0].Providers != 2 || svc.Services[0].Registration != "application" {
		t.Fatalf("rows %+v", svc.Services)
	}
	methods := []string{}
	for _, m := range svc.Methods {
		if m.Version == "2.0.0" {
			methods = append(methods, m.Name)
		}
	}
	if strings.Join(methods, ",") != "add,echoMap,fail,sayHello,sleep" {
		t.Fatalf("methods of 2.0.0: %v (%+v)", methods, svc.Methods)
	}

	// Test calls, through the API and the test page.
	call := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			st, body, _ := do(t, "POST", e.ConsoleURL+"/api/v1/invoke/"+appGreeter+"/sayHello?version=2.0.0", "application/json", `["app"]`)
			if st != 200 || body != `{"result":"Hello, app"}`+"\n" {
				t.Fatalf("invoke: %d %s", st, body)
			}
		}
	}
	call(1)
	br := browserClient(t)
	_, page, _ := send(t, br, "GET", e.ConsoleURL+"/services/"+appGreeter+"/test?method=sayHello", "", "")
	if !strings.Contains(page, "java.lang.String sayHello(java.lang.String) · 2.0.0") {
		t.Fatalf("the test page does not offer sayHello of 2.0.0:\n%s", page)
	}

	// Disable a: it leaves the service (its metadata drops it); calls go
	// to b; it is listed, withdrawn, to be enabled again.
	base := e.ConsoleURL + "/api/v1/services/" + appGreeter + "/providers/"
	if st, body, _ := do(t, "PUT", base+a+"/enabled", "application/json", `{"enabled": false}`); st != 200 && st != 204 {
		t.Fatalf("disable: %d %s", st, body)
	}
	waitFor(t, "calls on "+b+" only", func() bool {
		before := counts.snapshot()[a]
		call(10)
		return counts.snapshot()[a] == before
	})
	if p := providers()[a]; p.Enabled || !p.Withdrawn {
		t.Fatalf("disabled provider listed as %+v", p)
	}
	if st, body, _ := do(t, "PUT", base+a+"/enabled", "application/json", `{"enabled": true}`); st != 200 && st != 204 {
		t.Fatalf("enable: %d %s", st, body)
	}
	// Weight: a takes (nearly) every call.
	if st, body, _ := do(t, "PUT", base+b+"/weight", "application/json", `{"weight": 0}`); st != 200 && st != 204 {
		t.Fatalf("weight: %d %s", st, body)
	}
	waitFor(t, "calls on "+a+" only, b's weight 0", func() bool {
		before := counts.snapshot()[b]
		call(10)
		return counts.snapshot()[b] == before && providers()[b].Weight == 0 && providers()[a].Enabled
	})

	// The tag form of the application offers its instances.
	_, form, _ := send(t, br, "GET", e.ConsoleURL+"/forms/tag?key="+url.QueryEscape("app-greeter"), "", "")
	for _, addr := range []string{a, b} {
		if !strings.Contains(form, `name="tag.0.pick" value="`+addr+`"`) {
			t.Errorf("the tag form of app-greeter does not offer %s", addr)
		}
	}
	// The service page lists them with their controls.
	_, sp, _ := send(t, br, "GET", e.ConsoleURL+"/services/"+appGreeter, "", "")
	if !strings.Contains(sp, `<tr data-address="`+b+`"`) || !strings.Contains(sp, "application level") {
		t.Errorf("the service page does not list the application-level providers:\n%s", sp)
	}
}

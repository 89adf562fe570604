package zookeeper

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/url"
)

func testInstanceRegistration(t *testing.T, addr string) {
	ctx := context.Background()
	prov := newRegistry(t, addr, "", Options{})
	cons := newRegistry(t, addr, "", Options{})
	raw := rawConn(t, addr)

	in, err := metadata.NewInstance(metadata.InstanceSpec{
		App: "demo-provider", Host: "127.0.0.1", Port: 20880, Revision: "871fbc9cb2730caea9b0d858852d5ede",
		MetadataServiceParams: metadata.DefaultMetadataServiceParams(20880, "3.3.0"),
		Metadata:              map[string]string{"timestamp": "1700000000000"},
		TimeMillis:            1700000001000,
	})
	if err != nil {
		t.Fatal(err)
	}

	type update struct {
		app string
		ids []string
	}
	updates := make(chan update, 20)
	cancel, err := cons.WatchInstances(ctx, "demo-provider", func(app string, ins []*metadata.Instance) {
		var ids []string
		for _, in := range ins {
			ids = append(ids, in.ID+"@"+in.Revision())
		}
		updates <- update{app, ids}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	expect := func(want ...string) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for {
			select {
			case u := <-updates:
				if strings.Join(u.ids, ",") == strings.Join(want, ",") && u.app == "demo-provider" {
					return
				}
			case <-deadline:
				t.Fatalf("instances never became %v", want)
			}
		}
	}
	expect() // nothing yet, and /services/demo-provider does not exist

	if err := prov.RegisterInstance(ctx, in); err != nil {
		t.Fatal(err)
	}
	expect("127.0.0.1:20880@871fbc9cb2730caea9b0d858852d5ede")

	// Node shape: ephemeral leaf, container parent, Curator JSON.
	data, stat, err := raw.Get("/services/demo-provider/127.0.0.1:20880")
	if err != nil {
		t.Fatal(err)
	}
	if stat.EphemeralOwner != prov.conn.SessionID() {
		t.Errorf("instance owner %x, want %x", stat.EphemeralOwner, prov.conn.SessionID())
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("instance JSON: %v\n%s", err, data)
	}
	for k, want := range map[string]any{
		"name": "demo-provider", "id": "127.0.0.1:20880", "address": "127.0.0.1", "port": 20880.0,
		"sslPort": nil, "registrationTimeUTC": 1700000001000.0, "serviceType": "DYNAMIC", "uriSpec": nil,
	} {
		if got, ok := doc[k]; !ok || got != want {
			t.Errorf("%s = %#v, want %#v", k, got, want)
		}
	}
	payload, _ := doc["payload"].(map[string]any)
	if payload["@class"] != "org.apache.dubbo.registry.zookeeper.ZookeeperInstance" || payload["id"] != "127.0.0.1:20880" || payload["name"] != "demo-provider" {
		t.Errorf("payload = %v", payload)
	}
	md, _ := payload["metadata"].(map[string]any)
	if md["dubbo.endpoints"] != `[{"port":20880,"protocol":"dubbo"}]` || md["dubbo.metadata.storage-type"] != "local" ||
		md["dubbo.metadata.revision"] != "871fbc9cb2730caea9b0d858852d5ede" || md["timestamp"] != "1700000000000" {
		t.Errorf("metadata = %v", md)
	}
	var msp map[string]string
	if err := json.Unmarshal([]byte(md["dubbo.metadata-service.url-params"].(string)), &msp); err != nil ||
		msp["version"] != "1.0.0" || msp["port"] != "20880" || msp["protocol"] != "dubbo" || msp["release"] != "3.3.0" {
		t.Errorf("metadata service params = %v (%v)", msp, err)
	}

	// An update (new revision) replaces the node; watchers see it.
	in.Payload.Metadata[metadata.KeyRevision] = "rev2"
	if err := prov.RegisterInstance(ctx, in); err != nil {
		t.Fatal(err)
	}
	expect("127.0.0.1:20880@rev2")

	// The endpoints decode back.
	back, err := metadata.ParseInstance(data)
	if err != nil {
		t.Fatal(err)
	}
	eps, err := back.Endpoints()
	if err != nil || len(eps) != 1 || eps[0] != (metadata.Endpoint{Port: 20880, Protocol: "dubbo"}) {
		t.Errorf("endpoints %v %v", eps, err)
	}

	prov.Close()
	expect()
}

func testMappingCAS(t *testing.T, addr string) {
	ctx := context.Background()
	a := newRegistry(t, addr, "", Options{})
	b := newRegistry(t, addr, "", Options{})

	if apps, err := a.Mapping(ctx, greeter); err != nil || len(apps) != 0 {
		t.Fatalf("mapping before: %v %v", apps, err)
	}
	// Several providers of two apps start at once.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 4; i++ {
		for _, r := range []struct {
			reg *Registry
			app string
		}{{a, "app-a"}, {b, "app-b"}} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- r.reg.AddMapping(ctx, greeter, r.app)
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	raw := rawConn(t, addr)
	data, _, err := raw.Get("/dubbo/mapping/" + greeter)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(string(data), ",")
	sort.Strings(got)
	if strings.Join(got, ",") != "app-a,app-b" {
		t.Errorf("mapping data %q, want both apps once", data)
	}
	apps, err := b.Mapping(ctx, greeter)
	sort.Strings(apps)
	if err != nil || strings.Join(apps, ",") != "app-a,app-b" {
		t.Errorf("Mapping = %v, %v", apps, err)
	}
}

func testServiceDefinitionRoundTrip(t *testing.T, addr string) {
	ctx := context.Background()
	r := newRegistry(t, addr, "", Options{})
	def := &metadata.ServiceDefinition{
		CanonicalName: greeter,
		Methods: []metadata.MethodDefinition{
			{Name: "sayHello", ParameterTypes: []string{"java.lang.String"}, ReturnType: "java.lang.String"},
			{Name: "add", ParameterTypes: []string{"int", "int"}, ReturnType: "int"},
			{Name: "echoMap", ParameterTypes: []string{"java.util.Map"}, ReturnType: "java.util.Map"},
		},
		Types:      []metadata.TypeDefinition{{Type: "int"}, {Type: "java.lang.String"}, {Type: "java.util.Map"}},
		Parameters: map[string]string{"application": "demo-provider", "version": "1.0.0"},
	}
	if err := r.PublishServiceDefinition(ctx, greeter, "1.0.0", "", "demo-provider", def); err != nil {
		t.Fatal(err)
	}
	raw := rawConn(t, addr)
	if _, _, err := raw.Get("/dubbo/metadata/org.example.Greeter/1.0.0/provider/demo-provider"); err != nil {
		t.Fatalf("report node: %v", err)
	}
	got, err := r.GetServiceDefinition(ctx, greeter, "1.0.0", "")
	if err != nil {
		t.Fatal(err)
	}
	add, ok := got.Method("add")
	if !ok || len(add) != 1 || strings.Join(add[0].ParameterTypes, ",") != "int,int" || add[0].ReturnType != "int" {
		t.Errorf("add = %+v", add)
	}
	if got.CanonicalName != greeter || len(got.Methods) != 3 {
		t.Errorf("definition = %+v", got)
	}
	// A Java-written report (more fields) reads too.
	java := `{"parameters":{"side":"provider"},"canonicalName":"org.example.Greeter","codeSource":"file:/app.jar","methods":[{"name":"sayHello","parameterTypes":["java.lang.String"],"returnType":"java.lang.String","annotations":[]}],"types":[{"type":"java.lang.String"}],"annotations":[]}`
	if _, err := raw.Create("/dubbo/metadata/org.example.Greeter/2.0.0", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Create("/dubbo/metadata/org.example.Greeter/2.0.0/provider", nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Create("/dubbo/metadata/org.example.Greeter/2.0.0/provider/java-app", []byte(java), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	jd, err := r.GetServiceDefinition(ctx, greeter, "2.0.0", "")
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := jd.Method("sayHello"); !ok || m[0].ParameterTypes[0] != "java.lang.String" {
		t.Errorf("java definition = %+v", jd)
	}
	if _, err := r.GetServiceDefinition(ctx, greeter, "9.9.9", ""); !errors.Is(err, ErrNoDefinition) {
		t.Errorf("missing definition: %v", err)
	}

	// Remote application metadata.
	info := metadata.NewInfo("demo-provider", []*url.URL{providerURL(20880, greeter, "1.0.0")})
	if err := r.PublishAppMetadata(ctx, info); err != nil {
		t.Fatal(err)
	}
	back, err := r.GetAppMetadata(ctx, "demo-provider", info.Revision)
	if err != nil {
		t.Fatal(err)
	}
	if back.Revision != info.Revision || back.CalcRevision() != info.Revision || len(back.Services) != 1 {
		t.Errorf("app metadata round trip: %+v", back)
	}
}

func testMappingWatch(t *testing.T, addr string) {
	ctx := context.Background()
	const iface = "org.example.Watched"
	prov := newRegistry(t, addr, "", Options{})
	cons := newRegistry(t, addr, "", Options{})
	got := make(chan string, 20)
	cancel, err := cons.WatchMapping(ctx, iface, func(apps []string) { got <- strings.Join(apps, ",") })
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	expect := func(want string) {
		t.Helper()
		select {
		case apps := <-got:
			if apps != want {
				t.Fatalf("mapping %q, want %q", apps, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no mapping notification, want %q", want)
		}
	}
	select {
	case apps := <-got:
		t.Fatalf("notified %q before the mapping exists", apps)
	case <-time.After(50 * time.Millisecond):
	}
	if err := prov.AddMapping(ctx, iface, "app-a"); err != nil {
		t.Fatal(err)
	}
	expect("app-a")
	if err := prov.AddMapping(ctx, iface, "app-b"); err != nil {
		t.Fatal(err)
	}
	expect("app-a,app-b")

	// A second watcher of the same mapping gets the current list at once.
	late := make(chan string, 1)
	cancel2, err := cons.WatchMapping(ctx, iface, func(apps []string) { late <- strings.Join(apps, ",") })
	if err != nil {
		t.Fatal(err)
	}
	defer cancel2()
	if apps := <-late; apps != "app-a,app-b" {
		t.Fatalf("late watcher got %q", apps)
	}
	if err := rawConn(t, addr).Delete(prov.MappingPath(iface), -1); err != nil {
		t.Fatal(err)
	}
	expect("")
}

// dubbo-go v3.3.0 keeps remote application metadata at /dubbo/<app>/<rev>,
// with its own JSON field set.
func testDubboGoAppMetadata(t *testing.T, addr string) {
	ctx := context.Background()
	r := newRegistry(t, addr, "", Options{})
	raw := rawConn(t, addr)
	doc := `{"app":"dg-app","revision":"123","Tag":"","services":{"org.example.Greeter:1.0.0:dubbo":{"name":"org.example.Greeter","version":"1.0.0","protocol":"dubbo","port":20000,"path":"org.example.Greeter","params":{"application":"dg-app","methods":"sayHello"}}}}`
	if _, err := raw.Create("/dubbo/dg-app", nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		t.Fatal(err)
	}
	if _, err := raw.Create("/dubbo/dg-app/123", []byte(doc), 0, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	info, err := r.GetAppMetadata(ctx, "dg-app", "123")
	if err != nil {
		t.Fatal(err)
	}
	s := info.Services["org.example.Greeter:1.0.0:dubbo"]
	if info.App != "dg-app" || s == nil || s.Port != 20000 || s.Params["methods"] != "sayHello" {
		t.Fatalf("dubbo-go metadata %+v", info)
	}
	if _, err := r.GetAppMetadata(ctx, "dg-app", "456"); err == nil || !strings.Contains(err.Error(), "/dubbo/dg-app/456") {
		t.Fatalf("missing revision: %v", err)
	}
}

// testInstanceUpdate: UpdateInstance changes the instance node in place (a
// provider whose services changed): watchers see the new revision and
// never an empty list; an instance not registered yet is registered.
func testInstanceUpdate(t *testing.T, addr string) {
	ctx := context.Background()
	prov := newRegistry(t, addr, "", Options{})
	cons := newRegistry(t, addr, "", Options{})
	raw := rawConn(t, addr)
	in, err := metadata.NewInstance(metadata.InstanceSpec{
		App: "update-provider", Host: "127.0.0.1", Port: 20880, Revision: "rev1",
		MetadataServiceParams: metadata.DefaultMetadataServiceParams(20880, "3.3.0"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := prov.UpdateInstance(ctx, in); err != nil { // not registered yet
		t.Fatal(err)
	}
	path := "/services/update-provider/" + in.ID
	_, first, err := raw.Get(path)
	if err != nil || first.EphemeralOwner != prov.conn.SessionID() {
		t.Fatalf("UpdateInstance of a new instance: %v, owner %x", err, first.EphemeralOwner)
	}

	lists := make(chan []string, 20)
	cancel, err := cons.WatchInstances(ctx, "update-provider", func(_ string, ins []*metadata.Instance) {
		var revs []string
		for _, in := range ins {
			revs = append(revs, in.Revision())
		}
		lists <- revs
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if got := <-lists; strings.Join(got, ",") != "rev1" {
		t.Fatalf("watch starts with %v, want [rev1]", got)
	}
	in.Payload.Metadata[metadata.KeyRevision] = "rev2"
	if err := prov.UpdateInstance(ctx, in); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(5 * time.Second)
	for done := false; !done; {
		select {
		case got := <-lists:
			switch strings.Join(got, ",") {
			case "rev2":
				done = true
			case "":
				t.Fatal("the watcher saw no instance during the update")
			}
		case <-deadline:
			t.Fatal("the watcher never saw rev2")
		}
	}
	_, now, err := raw.Get(path)
	if err != nil || now.Czxid != first.Czxid || now.EphemeralOwner != prov.conn.SessionID() {
		t.Errorf("the instance node was re-created (czxid %d, was %d; %v), want it updated in place", now.Czxid, first.Czxid, err)
	}
}

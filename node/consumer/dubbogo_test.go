package consumer_test

import (
	"os"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
	"github.com/dubbo-lab/dubbo/internal/testkit/dubbogo"
)

func TestMain(m *testing.M) {
	if zkAddr := os.Getenv(childProviderEnv); zkAddr != "" {
		serveChildProvider(zkAddr) // a provider process that a test kills
		return
	}
	code := m.Run()
	dubbogo.RemoveBuilds()
	os.Exit(code)
}

// A stock dubbo-go v3.3.0 provider in its default mode registers only its
// application instance (with its metadata at /dubbo/<app>/<revision>); our
// consumer finds it through the mapping and calls every Greeter method.
func TestDubboGoApplicationLevelProvider(t *testing.T) {
	if testing.Short() {
		t.Skip("dubbo-go peers skipped with -short")
	}
	dubbogo.Build(t)
	zkAddr := apachezk.Start(t, apachezk.Options{}).Addr()
	p := dubbogo.StartProvider(t, dubbogo.ProviderOptions{Registry: "zookeeper://" + zkAddr,
		RegisterMode: dubbogo.RegisterInstance, App: "dg-greeter"})
	zc := zkConn(t, zkAddr)
	if kids, _, err := zc.Children("/dubbo/org.example.Greeter/providers"); err == nil && len(kids) > 0 {
		t.Fatalf("dubbo-go registered interface-level URLs: %v", kids)
	}

	ref := greeterRef()
	c := newConsumer(t, zkAddr, ref)
	r, _ := c.Reference(testCtx(t), ref)
	if ps := r.Providers(); len(ps) != 1 || ps[0].URL().Address() != p.Addr || ps[0].URL().Param("application") != "dg-greeter" {
		t.Fatalf("providers %v", ps)
	}
	ctx := testCtx(t)
	value := func(method string, types []string, args ...any) any {
		t.Helper()
		res, err := c.Invoke(ctx, call(method, types, args...))
		if err != nil || res.Exception != nil {
			t.Fatalf("%s: %v %v", method, res, err)
		}
		return res.Value
	}
	if v := value("sayHello", []string{"java.lang.String"}, "dubbo"); v != "Hello, dubbo" {
		t.Errorf("sayHello = %#v", v)
	}
	if v := value("add", []string{"int", "int"}, int32(20), int32(22)); v != int32(42) {
		t.Errorf("add = %#v (%T)", v, v)
	}
	if v := value("sleep", []string{"int"}, int32(10)); v != "slept" {
		t.Errorf("sleep = %#v", v)
	}
	if v, ok := value("echoMap", []string{"java.util.Map"}, map[string]any{"a": "b"}).(map[any]any); !ok || v["a"] != "b" {
		t.Errorf("echoMap = %#v", v)
	}
	res, err := c.Invoke(ctx, call("fail", []string{"java.lang.String"}, "it broke"))
	if err != nil || res.Exception == nil || res.Exception.Message != "it broke" {
		t.Errorf("fail = %v, %v", res, err)
	}

	// SIGTERM: dubbo-go deletes its instance node and the provider leaves.
	p.Stop(15 * time.Second)
	waitProviders(t, c, ref, 0)
}

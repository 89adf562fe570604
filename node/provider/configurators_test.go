package provider_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/url"
)

// waitFor polls cond for up to a second, the time a rule may take.
func waitFor(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 1s, still not %s: %s", what, state)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

const (
	greeterProviders     = "/dubbo/org.example.Greeter/providers"
	greeterConfigurators = "/dubbo/org.example.Greeter/configurators"
	greeterRuleKey       = "org.example.Greeter:1.0.0:.configurators"
)

// TestProviderOverrideRules follows provider-side rules from all three
// sources and checks the registered URL, on our ZooKeeper and Apache's.
func TestProviderOverrideRules(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { testProviderOverrideRules(t, zktest.StartEmbedded(t, embeddedzk.Config{})) })
	t.Run("apache", func(t *testing.T) {
		if testing.Short() {
			t.Skip("Apache ZooKeeper skipped with -short")
		}
		testProviderOverrideRules(t, apachezk.Start(t, apachezk.Options{}).Addr())
	})
}

func testProviderOverrideRules(t *testing.T, zkAddr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logs := &syncbuf.Buffer{}
	p, err := provider.Start(ctx, provider.Config{Application: "greeter-app", Registry: "zookeeper://" + zkAddr,
		Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}},
		provider.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.Export(ctx, providertest.Greeter(nil)); err != nil {
		t.Fatal(err)
	}
	original := p.URLs()[0]

	admin, err := zookeeper.New(url.MustParse("zookeeper://"+zkAddr), zookeeper.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	zc := zkConn(t, zkAddr)

	registered := func(t *testing.T) []*url.URL {
		t.Helper()
		children, _, err := zc.Children(greeterProviders)
		if err != nil {
			t.Fatal(err)
		}
		var out []*url.URL
		for _, c := range children {
			u, err := url.Decode(c)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, u)
		}
		return out
	}
	// registeredWith waits until the only provider node has params.
	registeredWith := func(t *testing.T, params map[string]string) *url.URL {
		t.Helper()
		var got *url.URL
		waitFor(t, fmt.Sprintf("registered with %v", params), func() (bool, string) {
			us := registered(t)
			if len(us) != 1 {
				return false, fmt.Sprint(us)
			}
			got = us[0]
			for k, v := range params {
				if got.Param(k) != v {
					return false, got.String()
				}
			}
			return true, ""
		})
		return got
	}
	restored := func(t *testing.T) {
		t.Helper()
		waitFor(t, "restored", func() (bool, string) {
			us := registered(t)
			return len(us) == 1 && us[0].Equal(original), fmt.Sprint(us)
		})
	}
	publish := func(t *testing.T, key, content string) {
		t.Helper()
		if err := admin.PublishConfig(ctx, key, content); err != nil {
			t.Fatal(err)
		}
	}
	remove := func(t *testing.T, key string) {
		t.Helper()
		if err := admin.DeleteConfig(ctx, key); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("service rule", func(t *testing.T) {
		// Only the item naming our address applies.
		publish(t, greeterRuleKey, fmt.Sprintf(`configVersion: v3.0
scope: service
key: "org.example.Greeter:1.0.0:"
enabled: true
configs:
  - side: provider
    addresses: ["127.0.0.1:%d"]
    parameters:
      weight: 300
  - side: provider
    addresses: ["10.9.9.9"]
    parameters:
      timeout: 999
  - side: consumer
    parameters:
      retries: 7
`, p.Port()))
		u := registeredWith(t, map[string]string{"weight": "300"})
		if u.HasParam("timeout") || u.HasParam("retries") {
			t.Fatalf("rules for others applied: %s", u)
		}
		if !u.WithoutParams("weight").Equal(original) {
			t.Fatalf("registered %s, want %s with weight=300", u, original)
		}
		// The provider records its new URL right after registering it.
		waitFor(t, "URLs() to show the registered URL", func() (bool, string) {
			got := p.URLs()[0]
			return got.Equal(u), fmt.Sprintf("URLs() = %s, registered %s", got, u)
		})
	})

	t.Run("invalid rule keeps the previous one", func(t *testing.T) {
		publish(t, greeterRuleKey, "configVersion: v3.0\nscope: service\nkey: \"org.example.Greeter:1.0.0:\"\nconfigs: []\n")
		waitFor(t, "logged", func() (bool, string) {
			return strings.Contains(logs.String(), "ignoring invalid override rule"), logs.String()
		})
		if us := registered(t); len(us) != 1 || us[0].Param("weight") != "300" {
			t.Fatalf("after an invalid rule: %v", us)
		}
		remove(t, greeterRuleKey)
		restored(t)
	})

	t.Run("registry override URL and disabled application rule", func(t *testing.T) {
		override := url.MustParse("override://0.0.0.0/org.example.Greeter?category=configurators&dynamic=false&enabled=true&version=1.0.0&timeout=3000")
		node := greeterConfigurators + "/" + override.Encode()
		if _, err := zc.Create(node, nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatal(err)
		}
		registeredWith(t, map[string]string{"timeout": "3000"})

		publish(t, "greeter-app.configurators", `configVersion: v3.0
scope: application
key: greeter-app
configs:
  - side: provider
    addresses: ["0.0.0.0"]
    parameters:
      disabled: true
`)
		waitFor(t, "withdrawn", func() (bool, string) {
			us := registered(t)
			return len(us) == 0, fmt.Sprint(us)
		})
		// The instance goes with its last service, just after it.
		waitFor(t, "instance withdrawn", func() (bool, string) {
			ok, _, err := zc.Exists("/services/greeter-app/" + p.Addr())
			return !ok && err == nil, fmt.Sprintf("the instance of a provider whose only service is disabled is still registered (%v)", err)
		})
		// Withdrawn, not stopped: direct calls work.
		res, err := dial(t, p.Addr()).Invoke(ctx, greeterCall("sayHello", []string{"java.lang.String"}, "still here"))
		if err != nil || res.Value != "Hello, still here" {
			t.Fatalf("direct call to a disabled service: %v %v", res, err)
		}

		remove(t, "greeter-app.configurators")
		registeredWith(t, map[string]string{"timeout": "3000"})
		waitFor(t, "instance back", func() (bool, string) {
			ok, _, _ := zc.Exists("/services/greeter-app/" + p.Addr())
			return ok, ""
		})
		if err := zc.Delete(node, -1); err != nil {
			t.Fatal(err)
		}
		restored(t)
	})

	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if us := registered(t); len(us) != 0 {
		t.Fatalf("after shutdown: %v", us)
	}
}

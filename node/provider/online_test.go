package provider_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/provider"
)

// TestOfflineOnline takes a provider's services out of the registry and
// back, as the QoS offline and online commands do, and checks the tree a
// consumer reads: the interface-level URL and the application instance.
func TestOfflineOnline(t *testing.T) {
	zktest.Both(t, func(t *testing.T, zkAddr string) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		p := startProvider(t, provider.Config{Registry: "zookeeper://" + zkAddr})
		if err := p.Export(ctx, providertest.Greeter(nil)); err != nil {
			t.Fatal(err)
		}
		zc := zkConn(t, zkAddr)
		instance := "/services/greeter-app/" + p.Addr()
		state := func() string {
			urls, _, _ := zc.Children(greeterProviders)
			ok, _, _ := zc.Exists(instance)
			return fmt.Sprintf("providers=%d instance=%v", len(urls), ok)
		}
		waitFor(t, "registered", func() (bool, string) { s := state(); return s == "providers=1 instance=true", s })

		none := func(string) bool { return false }
		if found, err := p.Offline(ctx, none); found || err != nil {
			t.Fatalf("offline of nothing: found=%v err=%v", found, err)
		}
		all := func(k string) bool { return strings.Contains(k, "Greeter") }
		if found, err := p.Offline(ctx, all); !found || err != nil {
			t.Fatalf("offline: found=%v err=%v", found, err)
		}
		waitFor(t, "withdrawn", func() (bool, string) { s := state(); return s == "providers=0 instance=false", s })
		if got := p.Services(); len(got) != 1 || got[0].Published || !got[0].Offline {
			t.Errorf("services while offline: %+v", got)
		}
		// A plugin restarting meanwhile exports the service again: it stays offline.
		if err := p.Export(ctx, providertest.Greeter(nil)); err != nil {
			t.Fatal(err)
		}
		if s := state(); s != "providers=0 instance=false" {
			t.Errorf("re-export while offline published it: %s", s)
		}
		if found, err := p.Online(ctx, all); !found || err != nil {
			t.Fatalf("online: found=%v err=%v", found, err)
		}
		waitFor(t, "registered again", func() (bool, string) { s := state(); return s == "providers=1 instance=true", s })
		if got := p.Services(); len(got) != 1 || !got[0].Published || got[0].Offline {
			t.Errorf("services after online: %+v", got)
		}
	})
}

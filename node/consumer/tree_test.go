package consumer_test

import (
	"testing"

	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"

	"github.com/dubbo-lab/dubbo/node/provider"
)

// TestZooKeeperTreeLikeDubbo3 checks that a provider and a consumer leave the
// tree a Java Dubbo 3.3 pair leaves (PROTOCOLS.md C.8), node by node.
func TestZooKeeperTreeLikeDubbo3(t *testing.T) {
	zktest.Both(t, func(t *testing.T, zkAddr string) {
		p := startProvider(t, zkAddr, provider.Config{}, nil)
		newConsumer(t, zkAddr, greeterRef())
		zc := zkConn(t, zkAddr)

		want := []struct {
			path      string
			ephemeral bool
			children  int // -1: any number
		}{
			{"/dubbo/org.example.Greeter/configurators", false, -1},
			{"/dubbo/org.example.Greeter/routers", false, -1},
			{"/dubbo/org.example.Greeter/providers", false, 1},
			{"/dubbo/org.example.Greeter/consumers", false, 1},
			{"/dubbo/config/dubbo", false, -1},
			{"/dubbo/config/DUBBO_SERVICEDISCOVERY_MIGRATION", false, -1},
			{"/dubbo/mapping/org.example.Greeter", false, 0},
			{"/dubbo/metadata/org.example.Greeter/1.0.0/provider/greeter-app", false, 0},
			{"/dubbo/metadata/org.example.Greeter/1.0.0/consumer/greeter-consumer", false, 0},
			{"/services/greeter-app/" + p.Addr(), true, 0},
		}
		for _, w := range want {
			kids, st, err := zc.Children(w.path)
			if err != nil {
				t.Errorf("%s: %v", w.path, err)
				continue
			}
			if (st.EphemeralOwner != 0) != w.ephemeral {
				t.Errorf("%s: ephemeral = %v, want %v", w.path, st.EphemeralOwner != 0, w.ephemeral)
			}
			if w.children >= 0 && len(kids) != w.children {
				t.Errorf("%s: %d children %v, want %d", w.path, len(kids), kids, w.children)
			}
		}
		// Leaves under providers and consumers are ephemeral, as Dubbo's are.
		for _, folder := range []string{"/dubbo/org.example.Greeter/providers", "/dubbo/org.example.Greeter/consumers"} {
			kids, _, _ := zc.Children(folder)
			for _, k := range kids {
				_, st, err := zc.Exists(folder + "/" + k)
				if err != nil || st.EphemeralOwner == 0 {
					t.Errorf("%s/%s: want an ephemeral node (err %v)", folder, k, err)
				}
			}
		}
		if data, _, err := zc.Get("/dubbo/mapping/org.example.Greeter"); err != nil || string(data) != "greeter-app" {
			t.Errorf("mapping = %q, %v; want greeter-app", data, err)
		}
	})
}

package catalog

import (
	"context"
	"fmt"
	"log/slog"
	neturl "net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
)

// catalogSize is how many services, instances and rules the registry
// holds: enough that reading them all again on every event shows.
const catalogSize = 40

func providerNode(s, p int) string {
	u := fmt.Sprintf("dubbo://10.1.0.%d:20880/com.example.S%d?application=shop&interface=com.example.S%d&methods=find&side=provider&version=1.0.0", p, s, s)
	return fmt.Sprintf("/dubbo/com.example.S%d/providers/%s", s, neturl.QueryEscape(u))
}

func instanceData(port int) []byte {
	return []byte(`{"name":"shop","id":"10.1.0.1:` + strconv.Itoa(port) + `","address":"10.1.0.1","port":` + strconv.Itoa(port) +
		`,"payload":{"@class":"org.apache.dubbo.registry.zookeeper.ZookeeperInstance","id":"x","name":"shop","metadata":{"dubbo.metadata.revision":"r1"}}}`)
}

// received is the number of requests the server has received (srvr).
func received(t *testing.T, addr string) int {
	t.Helper()
	out, err := apachezk.FourLetter(addr, "srvr", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Received: "); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no Received line in srvr: %q", out)
	return 0
}

// The catalog follows every kind of change, and an event costs reads of
// what changed only: a new provider, instance, interface or rule among
// catalogSize others is a few requests, not one per sibling.
func TestCatalogFollowsChangesCheaply(t *testing.T) {
	zktest.Both(t, func(t *testing.T, addr string) {
		conn, mk := nodeMaker(t, addr)
		for _, p := range []string{"/dubbo", "/dubbo/config", "/dubbo/config/dubbo", "/dubbo/mapping", "/services", "/services/shop"} {
			mk(p, nil)
		}
		for s := range catalogSize {
			mk(fmt.Sprintf("/dubbo/com.example.S%d", s), nil)
			mk(fmt.Sprintf("/dubbo/com.example.S%d/providers", s), nil)
			mk(providerNode(s, 1), nil)
			mk(fmt.Sprintf("/dubbo/mapping/com.example.S%d", s), []byte("shop"))
			mk(fmt.Sprintf("/dubbo/config/dubbo/com.example.S%d::.condition-router", s), []byte("conditions: []"))
			mk(fmt.Sprintf("/services/shop/10.1.0.1:%d", 30000+s), instanceData(30000+s))
		}

		c := loadedCatalog(t, addr)
		want := Counts{Services: catalogSize, Applications: 1, Providers: catalogSize, Instances: catalogSize}
		if got := c.Counts(); got != want {
			t.Fatalf("counts after loading %+v, want %+v", got, want)
		}

		steps := []struct {
			name   string
			change func()
			done   func() bool
		}{
			{"a provider", func() { mk(providerNode(3, 2), nil) }, func() bool {
				d, _ := c.Service("com.example.S3")
				return len(d.Providers) == 2
			}},
			{"an instance", func() { mk("/services/shop/10.1.0.1:40000", instanceData(40000)) }, func() bool {
				return c.Counts().Instances == catalogSize+1
			}},
			{"an instance's data", func() {
				if _, err := conn.Set("/services/shop/10.1.0.1:30001", instanceData(30099), -1); err != nil {
					t.Fatal(err)
				}
			}, func() bool {
				a, _ := c.Application("shop")
				for _, in := range a.Instances {
					if in.ID == "10.1.0.1:30001" && in.Address == "10.1.0.1:30099" {
						// As registered, for application-level discovery.
						for _, r := range c.InstancesOf("shop") {
							if r.Address == "10.1.0.1" && r.Port == 30099 {
								return true
							}
						}
					}
				}
				return false
			}},
			{"an interface", func() {
				mk("/dubbo/com.example.New", nil)
				mk("/dubbo/com.example.New/providers", nil)
				mk("/dubbo/com.example.New/providers/"+neturl.QueryEscape("dubbo://10.9.9.9:20880/com.example.New?interface=com.example.New&side=provider"), nil)
			}, func() bool {
				d, ok := c.Service("com.example.New")
				return ok && len(d.Providers) == 1
			}},
			{"a rule", func() { mk("/dubbo/config/dubbo/shop.tag-router", []byte("tags: []")) }, func() bool {
				_, ok := c.RuleContent("shop.tag-router")
				return ok
			}},
			{"a rule's content", func() {
				if _, err := conn.Set("/dubbo/config/dubbo/com.example.S5::.condition-router", []byte("conditions: [x]"), -1); err != nil {
					t.Fatal(err)
				}
			}, func() bool {
				s, _ := c.RuleContent("com.example.S5::.condition-router")
				return s == "conditions: [x]"
			}},
			{"a mapping", func() { mk("/dubbo/mapping/com.example.Only", []byte("shop")) }, func() bool {
				_, ok := c.Service("com.example.Only")
				return ok
			}},
			{"a deleted instance", func() {
				if err := conn.Delete("/services/shop/10.1.0.1:30002", -1); err != nil {
					t.Fatal(err)
				}
			}, func() bool { return c.Counts().Instances == catalogSize }},
			{"the instance again", func() { mk("/services/shop/10.1.0.1:30002", instanceData(30002)) }, func() bool {
				return c.Counts().Instances == catalogSize+1
			}},
			{"a deleted provider", func() {
				if err := conn.Delete(providerNode(3, 2), -1); err != nil {
					t.Fatal(err)
				}
			}, func() bool {
				d, _ := c.Service("com.example.S3")
				return len(d.Providers) == 1
			}},
			{"a deleted rule", func() {
				if err := conn.Delete("/dubbo/config/dubbo/shop.tag-router", -1); err != nil {
					t.Fatal(err)
				}
			}, func() bool {
				_, ok := c.RuleContent("shop.tag-router")
				return !ok
			}},
			{"a deleted interface", func() {
				for _, p := range []string{
					"/dubbo/com.example.New/providers/" + neturl.QueryEscape("dubbo://10.9.9.9:20880/com.example.New?interface=com.example.New&side=provider"),
					"/dubbo/com.example.New/providers", "/dubbo/com.example.New",
				} {
					if err := conn.Delete(p, -1); err != nil {
						t.Fatal(err)
					}
				}
			}, func() bool {
				_, ok := c.Service("com.example.New")
				return !ok
			}},
		}
		for _, st := range steps {
			before := received(t, addr)
			st.change()
			deadline := time.Now().Add(10 * time.Second)
			for !st.done() {
				if time.Now().After(deadline) {
					t.Fatalf("%s: the catalog did not follow within 10s", st.name)
				}
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond) // any read the event still causes
			// Our own requests: the change (at most 3), srvr itself, a
			// ping or two of each session.
			if n := received(t, addr) - before; n > 12 {
				t.Errorf("%s among %d others: the server received %d requests, want a few", st.name, catalogSize, n)
			}
		}
	})
}

// nodeMaker connects to the registry at addr as a Dubbo node would, and
// returns a function that creates persistent nodes (one already there is
// left as it is).
func nodeMaker(t *testing.T, addr string) (*zk.Conn, func(p string, data []byte)) {
	t.Helper()
	conn, _, err := zk.Connect([]string{addr}, 30*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn, func(p string, data []byte) {
		t.Helper()
		if _, err := conn.Create(p, data, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			t.Fatalf("create %s: %v", p, err)
		}
	}
}

// loadedCatalog follows the registry at addr, read once.
func loadedCatalog(t *testing.T, addr string) *Catalog {
	t.Helper()
	c, err := New("zookeeper://"+addr, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitLoaded(ctx); err != nil {
		t.Fatal(err)
	}
	return c
}

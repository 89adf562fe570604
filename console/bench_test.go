package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/console"
	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/monitor/store"
)

// Benchmark scale: the scale suite's registry (test/scale): 500 services,
// 10,000 providers and 10,000 consumer nodes (200 consumers of 50 services).
const (
	benchServices  = 500
	benchProviders = 20 // per service
	benchConsumers = 20 // per service
)

// bigRegistry fills a real embedded registry with benchServices services
// of benchProviders providers and benchConsumers consumers each, registered as Dubbo
// nodes write them, and returns a console over it (and a store) once the
// console's copy holds them all.
func bigRegistry(b *testing.B) *console.Console {
	b.Helper()
	off := false
	zkAddr := zktest.StartEmbedded(b, embeddedzk.Config{Fsync: &off})
	conn, _, err := zk.Connect([]string{zkAddr}, 30*time.Second, zk.WithLogInfo(false))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	acl := zk.WorldACL(zk.PermAll)
	mk := func(p string) {
		if _, err := conn.Create(p, nil, 0, acl); err != nil && err != zk.ErrNodeExists {
			b.Fatalf("create %s: %v", p, err)
		}
	}
	mk("/dubbo")
	for s := 0; s < benchServices; s++ {
		iface := fmt.Sprintf("com.example.shop.Service%03d", s)
		base := "/dubbo/" + iface
		mk(base)
		mk(base + "/providers")
		mk(base + "/consumers")
		var ops []any
		for p := 0; p < benchProviders; p++ {
			u := fmt.Sprintf("dubbo://10.1.%d.%d:20880/%s?anyhost=false&application=shop-app-%d&deprecated=false&dubbo=2.0.2&dynamic=true&generic=false&interface=%s&methods=find,list,save,delete&pid=%d&release=3.3.0&side=provider&timestamp=1700000000000&version=1.0.0&weight=100",
				s%250, p+1, iface, s%50, iface, 1000+p)
			ops = append(ops, &zk.CreateRequest{Path: base + "/providers/" + url.QueryEscape(u), Acl: acl, Flags: 0})
		}
		for c := 0; c < benchConsumers; c++ {
			n := (s/50*benchConsumers + c) % 200 // consumer n references 50 services
			cu := fmt.Sprintf("consumer://10.2.%d.%d/%s?application=web-%d&category=consumers&check=false&dubbo=2.0.2&interface=%s&side=consumer&version=1.0.0",
				n/250, n%250+1, iface, n, iface)
			ops = append(ops, &zk.CreateRequest{Path: base + "/consumers/" + url.QueryEscape(cu), Acl: acl, Flags: 0})
		}
		if _, err := conn.Multi(ops...); err != nil {
			b.Fatalf("register %s: %v", iface, err)
		}
	}
	st, err := store.Open(filepath.Join(b.TempDir(), "monitor.db"), store.Options{Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	c, err := console.New(testCtx(b), console.Options{Listen: "127.0.0.1:0", Registry: "zookeeper://" + zkAddr, Stats: st, Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Shutdown(testCtx(b)) })
	if err := c.Catalog().WaitLoaded(testCtx(b)); err != nil {
		b.Fatal(err)
	}
	if n := c.Catalog().Counts().Providers; n != benchServices*benchProviders {
		b.Fatalf("console sees %d providers", n)
	}
	return c
}

func benchPage(b *testing.B, c *console.Console, path, must string) {
	h := c.Handler()
	get := func() *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w
	}
	w := get()
	if w.Code != 200 || !strings.Contains(w.Body.String(), must) {
		b.Fatalf("GET %s: %d", path, w.Code)
	}
	b.SetBytes(int64(w.Body.Len()))
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		if w := get(); w.Code != 200 {
			b.Fatalf("GET %s: %d", path, w.Code)
		}
	}
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/1000, "ms/page")
}

// BenchmarkServicesPage renders /services over 500 services, 10,000
// providers and 10,000 consumers (goal: under 50 ms).
func BenchmarkServicesPage(b *testing.B) {
	c := bigRegistry(b)
	benchPage(b, c, "/services", "com.example.shop.Service499")
}

// BenchmarkServicePage renders one service page (its providers,
// consumers, rules and charts) in the same registry (goal: under 50 ms).
func BenchmarkServicePage(b *testing.B) {
	c := bigRegistry(b)
	benchPage(b, c, "/services/com.example.shop.Service250", "10.1.0.10:20880")
}

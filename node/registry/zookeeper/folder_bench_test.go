package zookeeper

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/registry"
	dubbourl "github.com/dubbo-lab/dubbo/node/url"
)

// BenchmarkFolderEvent is one provider registering, then leaving, among
// 1,000 of a service, until the subscriber is notified of each: what a
// folder event costs the consumer as the folder grows.
func BenchmarkFolderEvent(b *testing.B) {
	addr := zktest.StartEmbedded(b, embeddedzk.Config{})
	raw, _, err := zk.Connect([]string{addr}, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	const iface = "org.example.Big"
	folder := "/dubbo/" + iface + "/providers"
	for _, p := range []string{"/dubbo", "/dubbo/" + iface, folder} {
		if _, err := raw.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && err != zk.ErrNodeExists {
			b.Fatal(err)
		}
	}
	node := func(i int) string {
		u := fmt.Sprintf("dubbo://10.0.%d.%d:20880/%s?anyhost=false&application=big&dubbo=2.0.2&interface=%s&methods=a,b,c,d&side=provider&timestamp=1700000000000&version=1.0.0",
			i/250, i%250, iface, iface)
		return folder + "/" + url.QueryEscape(u)
	}
	for i := range 1000 {
		if _, err := raw.Create(node(i), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			b.Fatal(err)
		}
	}
	reg, err := New(dubbourl.MustParse("zookeeper://"+addr), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer reg.Close()
	ctx := context.Background()
	sizes := make(chan int, 16)
	sub := dubbourl.MustParse("consumer://127.0.0.1/" + iface + "?interface=" + iface + "&version=1.0.0&category=providers")
	if err := reg.Subscribe(ctx, sub, registry.ListenerFunc(func(n registry.Notification) { sizes <- len(n.URLs) })); err != nil {
		b.Fatal(err)
	}
	wait := func(want int) {
		for got := range sizes {
			if got == want {
				return
			}
		}
	}
	wait(1000)
	b.ResetTimer()
	for range b.N {
		if _, err := raw.Create(node(1000), nil, 0, zk.WorldACL(zk.PermAll)); err != nil {
			b.Fatal(err)
		}
		wait(1001)
		if err := raw.Delete(node(1000), -1); err != nil {
			b.Fatal(err)
		}
		wait(1000)
	}
}

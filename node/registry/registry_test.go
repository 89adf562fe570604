package registry

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/url"
)

func TestMatch(t *testing.T) {
	const (
		cons = "consumer://10.0.0.1/org.example.Greeter?interface=org.example.Greeter&category=providers,configurators,routers"
		prov = "dubbo://10.0.0.2:20880/org.example.Greeter?interface=org.example.Greeter"
	)
	tests := []struct {
		name           string
		consumer, prov string
		want           bool
	}{
		{"same, no version", cons, prov, true},
		{"version wanted, none offered", cons + "&version=1.0.0", prov, false},
		{"same version", cons + "&version=1.0.0", prov + "&version=1.0.0", true},
		{"other version", cons + "&version=1.0.0", prov + "&version=2.0.0", false},
		{"any version", cons + "&version=*", prov + "&version=2.0.0", true},
		{"other interface", cons, "dubbo://h:1/org.example.Other?interface=org.example.Other", false},
		{"group", cons + "&group=a", prov + "&group=a", true},
		{"group list", cons + "&group=a,b", prov + "&group=b", true},
		{"group missing", cons + "&group=a", prov, false},
		{"any group", cons + "&group=*", prov + "&group=x", true},
		{"disabled provider", cons, prov + "&enabled=false", false},
		{"disabled, consumer wants all", cons + "&enabled=*", prov + "&enabled=false", true},
		{"category not subscribed", "consumer://h/org.example.Greeter?interface=org.example.Greeter&category=routers", prov, false},
		{"route", cons, "condition://0.0.0.0/org.example.Greeter?category=routers&rule=x", true},
		{"default categories", "consumer://h/org.example.Greeter?interface=org.example.Greeter", "override://0.0.0.0/org.example.Greeter?category=configurators", true},
		{"classifier", cons + "&classifier=a", prov + "&classifier=b", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Match(url.MustParse(tt.consumer), url.MustParse(tt.prov)); got != tt.want {
				t.Errorf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestFileCacheRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "cache.json")
	c, err := OpenFileCache(path)
	if err != nil {
		t.Fatal(err)
	}
	p := url.MustParse("dubbo://10.0.0.2:20880/org.example.Greeter?interface=org.example.Greeter&version=1.0.0")
	if err := c.Put("org.example.Greeter:1.0.0", CategoryProviders, []*url.URL{p}); err != nil {
		t.Fatal(err)
	}
	if err := c.Put("org.example.Greeter:1.0.0", CategoryRouters, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	again, err := OpenFileCache(path)
	if err != nil {
		t.Fatal(err)
	}
	lists, ok := again.Get("org.example.Greeter:1.0.0")
	if !ok || len(lists[CategoryProviders]) != 1 || !lists[CategoryProviders][0].Equal(p) || len(lists[CategoryRouters]) != 0 {
		t.Fatalf("cached lists %v %v", lists, ok)
	}
	if _, ok := again.Get("other"); ok {
		t.Error("unknown key found")
	}
	// Another key changes: the file keeps the first as it was.
	q := url.MustParse("dubbo://10.0.0.3:20880/org.example.Other?interface=org.example.Other")
	for _, u := range [][]*url.URL{{q}, {p, q}} {
		if err := c.Put("org.example.Other", CategoryProviders, u); err != nil {
			t.Fatal(err)
		}
		if err := c.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	again = mustOpen(t, path)
	lists, _ = again.Get("org.example.Greeter:1.0.0")
	other, _ := again.Get("org.example.Other")
	if len(lists[CategoryProviders]) != 1 || !lists[CategoryProviders][0].Equal(p) || len(other[CategoryProviders]) != 2 {
		t.Fatalf("after changing another key: %v and %v", lists, other)
	}
	// A corrupt file is reported and ignored.
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad, err := OpenFileCache(path)
	if err == nil {
		t.Error("corrupt cache not reported")
	}
	if _, ok := bad.Get("org.example.Greeter:1.0.0"); ok {
		t.Error("corrupt cache gave entries")
	}
}

// A burst of changes is written together: the first change after a quiet
// interval goes to the file at once, the ones that follow within the
// interval wait for it (or for Flush), so a consumer of many services does
// not rewrite the whole file on every notification.
func TestFileCacheWritesBurstsTogether(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.json")
	c, err := OpenFileCache(path)
	if err != nil {
		t.Fatal(err)
	}
	c.every = time.Hour
	key := "org.example.Greeter:1.0.0"
	provider := func(port int) []*url.URL {
		return []*url.URL{url.MustParse(fmt.Sprintf("dubbo://10.0.0.2:%d/org.example.Greeter?interface=org.example.Greeter", port))}
	}
	cachedPort := func() int {
		t.Helper()
		lists, ok := mustOpen(t, path).Get(key)
		if !ok || len(lists[CategoryProviders]) != 1 {
			return 0
		}
		return lists[CategoryProviders][0].Port()
	}
	if err := c.Put(key, CategoryProviders, provider(1)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for cachedPort() != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the first change was not written within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	for port := 2; port <= 1000; port++ {
		if err := c.Put(key, CategoryProviders, provider(port)); err != nil {
			t.Fatal(err)
		}
	}
	if got := cachedPort(); got != 1 {
		t.Fatalf("the file holds port %d right after the burst, want the list before it (1): written per change", got)
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := cachedPort(); got != 1000 {
		t.Fatalf("the file holds port %d after Flush, want 1000", got)
	}
}

// A write that fails is reported by the next Put, and written again.
func TestFileCacheReportsWriteErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "cache.json")
	c, err := OpenFileCache(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sub"), nil, 0o644); err != nil { // a file where the directory goes
		t.Fatal(err)
	}
	p := []*url.URL{url.MustParse("dubbo://10.0.0.2:20880/org.example.Greeter?interface=org.example.Greeter")}
	if err := c.Put("k", CategoryProviders, p); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err == nil {
		t.Fatal("Flush into a path under a file succeeded")
	}
	if err := os.Remove(filepath.Join(dir, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(); err != nil {
		t.Fatalf("Flush after the path was fixed: %v", err)
	}
	if _, ok := mustOpen(t, path).Get("k"); !ok {
		t.Fatal("the failed change was not written again")
	}
}

func mustOpen(t *testing.T, path string) *FileCache {
	t.Helper()
	c, err := OpenFileCache(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMemoryFullLists(t *testing.T) {
	ctx := context.Background()
	m := NewMemory()
	var got []Notification
	sub := url.MustParse("consumer://h/org.example.Greeter?interface=org.example.Greeter&version=1.0.0&category=providers,routers")
	if err := m.Subscribe(ctx, sub, ListenerFunc(func(n Notification) { got = append(got, n) })); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0].URLs) != 0 || len(got[1].URLs) != 0 {
		t.Fatalf("initial notifications %+v", got)
	}
	a := url.MustParse("dubbo://h:1/org.example.Greeter?interface=org.example.Greeter&version=1.0.0")
	b := url.MustParse("dubbo://h:2/org.example.Greeter?interface=org.example.Greeter&version=1.0.0")
	for _, u := range []*url.URL{a, b} {
		if err := m.Register(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Unregister(ctx, a); err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("%d notifications, want 5: %+v", len(got), got)
	}
	if n := got[3]; n.Category != CategoryProviders || len(n.URLs) != 2 {
		t.Errorf("after two registrations: %+v", n)
	}
	if n := got[4]; len(n.URLs) != 1 || !n.URLs[0].Equal(b) {
		t.Errorf("after unregister: %+v", n)
	}
}

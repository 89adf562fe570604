//go:build unix

package scale

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/registry"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/url"
)

// fanout is the size of a registry fan-out run.
type fanout struct {
	apps      int // provider applications
	perApp    int // services each application provides
	instances int // instances (sessions) of each application
	consumers int // consumer processes (node/consumer, each its own session)
	// refs is how many services each consumer references: the first
	// application's, which every consumer references (the probes register
	// there), and as many of the others again, spread evenly.
	refs   int
	probes int // single registrations timed to every consumer
	wait   time.Duration
}

func (f fanout) services() int  { return f.apps * f.perApp }
func (f fanout) providers() int { return f.apps * f.instances }

// references lists the services consumer i references.
func (f fanout) references(i int) []int {
	if f.refs >= f.services() {
		return seq(0, f.services())
	}
	out := seq(0, f.perApp)
	others, n := f.services()-f.perApp, f.refs-f.perApp
	for k := range n {
		out = append(out, f.perApp+(i*n+k)%others)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func seq(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// fullFanout is the registry: 10,000 provider nodes (1,000 provider
// instances of 50 applications, 10 services each, 20 instances each)
// across 500 services, and 200 consumers of 50 services each (each of the
// 500 has 16 or more consumers; the 10 the probes use have all 200).
var fullFanout = fanout{apps: 50, perApp: 10, instances: 20, consumers: 200, refs: 50, probes: 30, wait: 5 * time.Minute}

// smallFanout keeps the properties and runs in `make test`.
var smallFanout = fanout{apps: 4, perApp: 5, instances: 5, consumers: 10, refs: 10, probes: 5, wait: 30 * time.Second}

func serviceName(s int) string { return fmt.Sprintf("com.example.scale.Service%03d", s) }

// providerURL is what our provider registers for one service of app at
// endpoint addr, in restart generation gen (its timestamp).
func providerURL(iface, app, addr string, gen int) *url.URL {
	host, port, _ := splitHostPort(addr)
	return url.New("dubbo", host, port, iface, map[string]string{
		"anyhost": "false", "application": app, "deprecated": "false", "dubbo": "2.0.2",
		"dynamic": "true", "generic": "false", url.KeyInterface: iface,
		"methods": "create,delete,find,list,update", "pid": "4242", "release": "3.3.0",
		"serialization": "hessian2", "prefer.serialization": "hessian2", "side": "provider",
		url.KeyTimestamp: strconv.Itoa(1_700_000_000_000 + gen), url.KeyVersion: "1.0.0", "weight": "100",
	})
}

func splitHostPort(addr string) (string, int, error) {
	u, err := url.Parse("x://" + addr)
	if err != nil {
		return "", 0, err
	}
	return u.Host(), u.Port(), nil
}

// providerSession is one provider instance: a ZooKeeper session that
// creates the ephemeral node of each service of its application, as our
// provider's registry client does (node/registry/zookeeper). It is a bare
// go-zookeeper session with small buffers rather than that client: a
// go-zookeeper connection holds 3 MB of buffers (1.5 MB each way), which
// a provider process pays once but a thousand sessions in the test process
// would pay a thousand times (3 GB) and which would swamp what is measured.
type providerSession struct {
	conn *zk.Conn
	urls []*url.URL
}

// sessionBuffer is the buffer each way of a provider session: its largest
// request is one provider node's create, its largest answer a few bytes.
const sessionBuffer = 64 << 10

func startProvider(ctx context.Context, zkAddr string, urls []*url.URL) (*providerSession, error) {
	conn, events, err := zk.Connect([]string{zkAddr}, 30*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}),
		zk.WithMaxBufferSize(sessionBuffer), zk.WithMaxConnBufferSize(sessionBuffer))
	if err != nil {
		return nil, err
	}
	for ev := range events {
		if ev.State == zk.StateHasSession {
			break
		}
		if ctx.Err() != nil {
			conn.Close()
			return nil, ctx.Err()
		}
	}
	go func() {
		for range events { // drained until the session closes
		}
	}()
	for _, u := range urls {
		p := providerPath(u)
		if _, err := conn.Create(p, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			conn.Close()
			return nil, fmt.Errorf("register %s: %w", p, err)
		}
	}
	return &providerSession{conn: conn, urls: urls}, nil
}

// createFolders creates the persistent providers folder of every service,
// as the first provider of each would.
func createFolders(t testing.TB, f fanout, zkAddr string) {
	t.Helper()
	conn, _, err := zk.Connect([]string{zkAddr}, 30*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for s := range f.services() {
		for _, p := range []string{"/dubbo", "/dubbo/" + serviceName(s), "/dubbo/" + serviceName(s) + "/providers"} {
			if _, err := conn.Create(p, nil, 0, zk.WorldACL(zk.PermAll)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
				t.Fatalf("create %s: %v", p, err)
			}
		}
	}
}

// startProviders starts the instances of every application in generation
// gen, workers at a time; instance i of every application points at
// endpoint i.
func startProviders(t testing.TB, f fanout, zkAddr string, eps []endpoint, gen int) []*providerSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := make([]*providerSession, f.providers())
	var firstErr atomic.Value
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	for a := range f.apps {
		for i := range f.instances {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				app := fmt.Sprintf("scale-provider-%02d", a)
				var urls []*url.URL
				for s := a * f.perApp; s < (a+1)*f.perApp; s++ {
					urls = append(urls, providerURL(serviceName(s), app, eps[i].addr, gen))
				}
				p, err := startProvider(ctx, zkAddr, urls)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				out[a*f.instances+i] = p
			}()
		}
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		t.Fatalf("start providers: %v", err)
	}
	return out
}

func closeProviders(ps []*providerSession) {
	var wg sync.WaitGroup
	for _, p := range ps {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); p.conn.Close() }()
	}
	wg.Wait()
}

// observer records what every consumer's registry subscription delivered:
// the provider lists of each service, as the consumer's directory got them
// (the listener below calls the consumer's own listener first).
type observer struct {
	mu     sync.Mutex
	views  []map[int]string // [consumer][service]: fingerprint of the last list
	want   []string         // [service]: fingerprint of the complete list, "" = none set
	ok     int              // (consumer, service) pairs whose view is want
	target int              // (consumer, service) pairs in all
	full   chan struct{}

	notes, dups atomic.Int64

	probe    *probe
	services map[string]int
	users    [][]int // [service]: the consumers referencing it
}

// probe is one provider registration being timed.
type probe struct {
	iface, addr string
	start       time.Time
	present     bool // wait for it to appear (else to go)
	pending     map[int]bool
	lat         []time.Duration
	done        chan struct{}
}

func newObserver(f fanout) *observer {
	o := &observer{views: make([]map[int]string, f.consumers), want: make([]string, f.services()),
		services: make(map[string]int), users: make([][]int, f.services())}
	for c := range o.views {
		o.views[c] = make(map[int]string)
		for _, s := range f.references(c) {
			o.views[c][s] = ""
			o.users[s] = append(o.users[s], c)
			o.target++
		}
	}
	for s := range f.services() {
		o.services[serviceName(s)] = s
	}
	return o
}

// fingerprint names a provider list by address and timestamp of each URL.
func fingerprint(urls []*url.URL) string {
	keys := make([]string, 0, len(urls))
	for _, u := range urls {
		keys = append(keys, u.Address()+"@"+u.Param(url.KeyTimestamp))
	}
	slices.Sort(keys)
	return fmt.Sprint(keys)
}

func (o *observer) notified(c int, iface string, urls []*url.URL) {
	s, ok := o.services[iface]
	if !ok {
		return
	}
	o.notes.Add(1)
	fp := fingerprint(urls)
	o.mu.Lock()
	defer o.mu.Unlock()
	old := o.views[c][s]
	if old == fp {
		o.dups.Add(1)
	}
	o.views[c][s] = fp
	if w := o.want[s]; w != "" {
		switch {
		case old != w && fp == w:
			o.ok++
		case old == w && fp != w:
			o.ok--
		}
		if o.full != nil && o.ok == o.target {
			close(o.full)
			o.full = nil
		}
	}
	if p := o.probe; p != nil && p.iface == iface && p.pending[c] {
		has := slices.ContainsFunc(urls, func(u *url.URL) bool { return u.Address() == p.addr })
		if has == p.present {
			delete(p.pending, c)
			p.lat = append(p.lat, time.Since(p.start))
			if len(p.pending) == 0 {
				close(p.done)
			}
		}
	}
}

// expect sets the complete list of every service and returns a channel
// closed once every consumer's view of every service it references is
// that list.
func (o *observer) expect(lists [][]*url.URL) <-chan struct{} {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ok = 0
	for s, urls := range lists {
		o.want[s] = fingerprint(urls)
	}
	for _, views := range o.views {
		for s, fp := range views {
			if fp == o.want[s] {
				o.ok++
			}
		}
	}
	ch := make(chan struct{})
	if o.ok == o.target {
		close(ch)
	} else {
		o.full = ch
	}
	return ch
}

// startProbe begins timing a registration (present) or removal of the
// provider at addr of iface; start is just before the create or delete.
func (o *observer) startProbe(iface, addr string, present bool) *probe {
	p := &probe{iface: iface, addr: addr, present: present, pending: make(map[int]bool), done: make(chan struct{})}
	for _, c := range o.users[o.services[iface]] {
		p.pending[c] = true
	}
	o.mu.Lock()
	o.probe = p
	p.start = time.Now()
	o.mu.Unlock()
	return p
}

func (o *observer) endProbe() {
	o.mu.Lock()
	o.probe = nil
	o.mu.Unlock()
}

// observedRegistry is a consumer's registry session with the observer
// listening to its provider notifications after the consumer.
type observedRegistry struct {
	*zookeeper.Registry
	obs *observer
	id  int
}

func (r *observedRegistry) Subscribe(ctx context.Context, consumerURL *url.URL, l registry.Listener) error {
	iface := registry.Interface(consumerURL)
	return r.Registry.Subscribe(ctx, consumerURL, registry.ListenerFunc(func(n registry.Notification) {
		l.Notify(n)
		if n.Category == registry.CategoryProviders {
			r.obs.notified(r.id, iface, n.URLs)
		}
	}))
}

// scaleConsumer is one consumer of the run: node/consumer with its own
// registry session and cache file, referencing every service.
type scaleConsumer struct {
	c   *consumer.Consumer
	reg *zookeeper.Registry
}

func startConsumers(t testing.TB, f fanout, zkAddr string, obs *observer) []*scaleConsumer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	no := false
	dir := t.TempDir()
	out := make([]*scaleConsumer, f.consumers)
	var firstErr atomic.Value
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range f.consumers {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			app := fmt.Sprintf("scale-web-%03d", i) // in one process, an application name apiece keeps their URLs apart, as pids would
			var refs []consumer.ReferenceConfig
			for _, s := range f.references(i) {
				refs = append(refs, consumer.ReferenceConfig{Interface: serviceName(s), Version: "1.0.0"})
			}
			cache := filepath.Join(dir, fmt.Sprintf("consumer-%d.json", i))
			reg, err := zookeeper.New(url.MustParse("zookeeper://"+zkAddr), zookeeper.Options{Logger: quiet(), CacheFile: cache})
			if err != nil {
				firstErr.CompareAndSwap(nil, err)
				return
			}
			if err := reg.WaitConnected(ctx); err != nil {
				reg.Close()
				firstErr.CompareAndSwap(nil, err)
				return
			}
			c, err := consumer.New(ctx, consumer.Config{Application: app, CacheFile: cache, References: refs,
				Defaults: consumer.Settings{Check: &no}}, consumer.Options{Registry: &observedRegistry{reg, obs, i}, Logger: quiet(), NoStatistics: true})
			if err == nil {
				err = c.Start(ctx)
			}
			if err != nil {
				reg.Close()
				firstErr.CompareAndSwap(nil, err)
				return
			}
			out[i] = &scaleConsumer{c: c, reg: reg}
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		var wg sync.WaitGroup
		for _, sc := range out {
			if sc != nil {
				wg.Add(1)
				go func() { defer wg.Done(); sc.c.Close(); sc.reg.Close() }()
			}
		}
		wg.Wait()
	})
	if err, _ := firstErr.Load().(error); err != nil {
		t.Fatalf("start consumers: %v", err)
	}
	return out
}

// expectedLists is the complete provider list of every service in
// generation gen.
func expectedLists(f fanout, eps []endpoint, gen int) [][]*url.URL {
	lists := make([][]*url.URL, f.services())
	for s := range lists {
		app := fmt.Sprintf("scale-provider-%02d", s/f.perApp)
		for i := range f.instances {
			lists[s] = append(lists[s], providerURL(serviceName(s), app, eps[i].addr, gen))
		}
	}
	return lists
}

// fanoutResult holds a run's figures.
type fanoutResult struct {
	setup, consumersUp    time.Duration
	probeAll, probeEach   []time.Duration // sorted: per probe the last consumer; per consumer and probe
	removeAll             []time.Duration
	storm                 time.Duration
	stormNotes, stormDups int64
	stormCPU              time.Duration
	idle, afterStorm      procStat
	watches               int
	goroutines            int // the embedded registry's, 0 for Apache
}

// runFanout runs the fan-out scenario against reg and checks its
// properties: every consumer converges after the consumers start, after
// each probe and after every provider restarted at once.
func runFanout(t testing.TB, f fanout, reg registryServer) fanoutResult {
	t.Helper()
	var res fanoutResult
	eps := startEndpoints(t, f.instances+1) // the last one is the probe's
	obs := newObserver(f)
	createFolders(t, f, reg.addr)
	start := time.Now()
	providers := startProviders(t, f, reg.addr, eps, 1)
	res.setup = time.Since(start)
	t.Cleanup(func() { closeProviders(providers) })

	start = time.Now()
	full := obs.expect(expectedLists(f, eps, 1))
	consumers := startConsumers(t, f, reg.addr, obs)
	select {
	case <-full:
	case <-time.After(f.wait):
		t.Fatalf("consumers did not all see every provider within %v", f.wait)
	}
	res.consumersUp = time.Since(start)
	checkDirectories(t, f, consumers, f.instances)

	res.watches = reg.watches(t)
	if reg.qos != "" {
		res.goroutines = goroutines(t, reg.qos)
	}
	res.idle = statOf(t, reg.pid)

	// Probes: one provider registers (a new session creating its node),
	// timed to each consumer; then it unregisters.
	conn, _, err := zk.Connect([]string{reg.addr}, 30*time.Second, zk.WithLogInfo(false), zk.WithLogger(nopLogger{}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	probeAddr := eps[f.instances].addr
	for i := range f.probes {
		// One more instance of the first application: every consumer
		// references its services, and watches its rules already (a new
		// application would add a watch on its tag rule to every consumer).
		s := i % f.perApp
		u := providerURL(serviceName(s), "scale-provider-00", probeAddr, 1)
		p := providerPath(u)
		pr := obs.startProbe(serviceName(s), probeAddr, true)
		if _, err := conn.Create(p, nil, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
			t.Fatalf("probe create %s: %v", p, err)
		}
		waitProbe(t, pr, "registration")
		res.probeAll = append(res.probeAll, slices.Max(pr.lat))
		res.probeEach = append(res.probeEach, pr.lat...)
		obs.endProbe()

		pr = obs.startProbe(serviceName(s), probeAddr, false)
		if err := conn.Delete(p, -1); err != nil {
			t.Fatalf("probe delete %s: %v", p, err)
		}
		waitProbe(t, pr, "removal")
		res.removeAll = append(res.removeAll, slices.Max(pr.lat))
		obs.endProbe()
	}
	slices.Sort(res.probeAll)
	slices.Sort(res.probeEach)
	slices.Sort(res.removeAll)

	// The storm: every provider instance restarts at once (its session
	// closes, taking its nodes, and a new one registers them again).
	full = obs.expect(expectedLists(f, eps, 2))
	notes, dups := obs.notes.Load(), obs.dups.Load()
	cpu0 := statOf(t, reg.pid).cpu
	start = time.Now()
	closeProviders(providers)
	providers = startProviders(t, f, reg.addr, eps, 2)
	select {
	case <-full:
	case <-time.After(f.wait):
		t.Fatalf("consumers did not all see every restarted provider within %v", f.wait)
	}
	res.storm = time.Since(start)
	res.afterStorm = statOf(t, reg.pid)
	res.stormCPU = res.afterStorm.cpu - cpu0
	res.stormNotes, res.stormDups = obs.notes.Load()-notes, obs.dups.Load()-dups
	checkDirectories(t, f, consumers, f.instances)
	if n := reg.watches(t); n != res.watches {
		t.Errorf("registry holds %d watches after the storm, %d before", n, res.watches)
	}
	return res
}

func waitProbe(t testing.TB, p *probe, what string) {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(time.Minute):
		t.Fatalf("probe %s of %s: %d consumers still without it after a minute", what, p.iface, len(p.pending))
	}
}

// checkDirectories checks every consumer's directory holds want available
// providers of every service.
func checkDirectories(t testing.TB, f fanout, consumers []*scaleConsumer, want int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, sc := range consumers {
		for _, s := range f.references(i) {
			r, err := sc.c.Reference(ctx, consumer.ReferenceConfig{Interface: serviceName(s), Version: "1.0.0"})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, fmt.Sprintf("consumer %d to connect to the providers of %s", i, serviceName(s)), time.Minute, func() bool {
				return len(r.Providers()) == want
			})
		}
	}
}

// providerPath is the node of a provider URL.
func providerPath(u *url.URL) string {
	return "/dubbo/" + neturl.QueryEscape(registry.Interface(u)) + "/providers/" + u.Encode()
}

type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

func (r fanoutResult) log(t testing.TB, name string, f fanout) {
	t.Logf("%s: %d services, %d provider nodes in %d sessions, %d consumers of %d services each", name, f.services(), f.services()*f.instances, f.providers(), f.consumers, f.refs)
	t.Logf("%s: providers registered in %v; consumers up and complete in %v", name, r.setup.Round(time.Millisecond), r.consumersUp.Round(time.Millisecond))
	t.Logf("%s: registration to every consumer: p50 %v p99 %v max %v (each consumer: p50 %v p99 %v); removal to every consumer p50 %v p99 %v",
		name, percentile(r.probeAll, 50), percentile(r.probeAll, 99), percentile(r.probeAll, 100),
		percentile(r.probeEach, 50), percentile(r.probeEach, 99), percentile(r.removeAll, 50), percentile(r.removeAll, 99))
	t.Logf("%s: storm (all %d providers restart at once): complete again in %v, %d notifications (%d repeated), registry CPU %v",
		name, f.providers(), r.storm.Round(time.Millisecond), r.stormNotes, r.stormDups, r.stormCPU)
	t.Logf("%s: registry RSS %.0f MB idle, %.0f MB after the storm, peak %.0f MB; %d watches; %d goroutines",
		name, r.idle.rssMB, r.afterStorm.rssMB, r.afterStorm.peakMB, r.watches, r.goroutines)
}

// TestRegistryFanout is the reduced fan-out run: every consumer converges
// after start-up, after one provider registers or leaves, and after every
// provider restarts at once, with no repeated notification and the
// registry's watch count unchanged by the storm; then a consumer process
// referencing every service starts (it would refuse to, with check on, if
// any reference lacked providers).
func TestRegistryFanout(t *testing.T) {
	f := smallFanout
	reg := startEmbeddedRegistry(t)
	res := runFanout(t, f, reg)
	res.log(t, "embedded", f)
	if res.stormDups != 0 {
		t.Errorf("%d repeated notifications in the storm", res.stormDups)
	}
	runConsumerProc(t, f, reg.addr, f.services()).log(t)
}

// BenchmarkScaleRegistry is the full-size run against our registry and
// Apache ZooKeeper, each its own process, then a consumer process of 50
// services (as each of the run's consumers) and one of all 500.
func BenchmarkScaleRegistry(b *testing.B) {
	for _, name := range []string{"embedded", "apache"} {
		b.Run(name, func(b *testing.B) {
			var reg registryServer
			if name == "embedded" {
				reg = startEmbeddedRegistry(b)
			} else {
				reg = startApacheRegistry(b)
			}
			f := fullFanout
			res := runFanout(b, f, reg)
			res.log(b, name, f)
			c50 := runConsumerProc(b, f, reg.addr, f.refs)
			c50.log(b)
			c500 := runConsumerProc(b, f, reg.addr, f.services())
			c500.log(b)
			b.ReportMetric(float64(percentile(res.probeAll, 50).Microseconds()), "p50_us")
			b.ReportMetric(float64(percentile(res.probeAll, 99).Microseconds()), "p99_us")
			b.ReportMetric(float64(percentile(res.removeAll, 99).Microseconds()), "remove_p99_us")
			b.ReportMetric(float64(res.consumersUp.Milliseconds()), "consumers_up_ms")
			b.ReportMetric(float64(res.storm.Milliseconds()), "converge_ms")
			b.ReportMetric(float64(res.stormNotes), "notifications")
			b.ReportMetric(res.stormCPU.Seconds(), "storm_cpu_s")
			b.ReportMetric(res.afterStorm.rssMB, "rss_MB")
			b.ReportMetric(res.afterStorm.peakMB, "peak_rss_MB")
			b.ReportMetric(c50.stat.rssMB, "consumer_rss_MB")
			b.ReportMetric(c500.stat.rssMB, "consumer500_rss_MB")
			b.ReportMetric(float64(c500.start.Milliseconds()), "consumer500_start_ms")
			b.ReportMetric(float64(c500.goroutines), "consumer500_goroutines")
		})
	}
}

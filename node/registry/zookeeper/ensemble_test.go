package zookeeper

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
	"github.com/dubbo-lab/dubbo/node/url"
)

// The ensemble's tick keeps elections at a few seconds; sessions are longer
// than a leader failover (about 3 s measured here) so they survive one.
const (
	ensembleTick    = 200 * time.Millisecond
	ensembleSession = "session=6000"
	// settle bounds every wait for the ensemble or the clients to catch up.
	settle = 15 * time.Second
)

// TestEnsemble runs the registry against a real three-member Apache
// ZooKeeper ensemble through a multi-host URL, as production nodes connect
// (zookeeper://a:2181,b:2181,c:2181). The subtests share the ensemble.
func TestEnsemble(t *testing.T) {
	start := time.Now()
	ens := apachezk.StartEnsemble(t, apachezk.EnsembleOptions{
		Size:              3,
		TickTime:          ensembleTick,
		MaxSessionTimeout: 10 * time.Second,
		DisableFsync:      true,
	})
	t.Logf("ensemble %s ready in %s, leader %d", ens.ConnectString(), time.Since(start).Round(time.Millisecond), ens.Leader())
	t.Run("DigestAuth", func(t *testing.T) { testEnsembleDigestAuth(t, ens) })
	t.Run("MemberKill", func(t *testing.T) { testEnsembleMemberKill(t, ens) })
}

// testEnsembleDigestAuth: credentials in a multi-host URL protect every
// node with the digest ACL, as every member reports.
func testEnsembleDigestAuth(t *testing.T, ens *apachezk.Ensemble) {
	ctx := context.Background()
	prov := newEnsembleRegistry(t, "admin:s3cret@"+ens.ConnectString(), "group=ensauth")
	p := providerURL(20880, greeter, "")
	if err := prov.Register(ctx, p); err != nil {
		t.Fatal(err)
	}
	want := zk.DigestACL(zk.PermAll, "admin", "s3cret")[0]
	leaf := "/ensauth/" + greeter + "/providers/" + p.Encode()
	for id := 1; id <= ens.Size(); id++ {
		raw := memberConn(t, ens, id)
		if err := raw.AddAuth("digest", []byte("admin:s3cret")); err != nil {
			t.Fatal(err)
		}
		syncPath(t, raw, leaf)
		for _, path := range []string{"/ensauth", "/ensauth/" + greeter, "/ensauth/" + greeter + "/providers", leaf} {
			acl, _, err := raw.GetACL(path)
			if err != nil {
				t.Fatalf("member %d: getACL %s: %v", id, path, err)
			}
			if len(acl) != 1 || acl[0] != want {
				t.Errorf("member %d: ACL of %s = %+v, want [%+v]", id, path, acl, want)
			}
		}
		raw.Close()
	}
	stranger := memberConn(t, ens, 1)
	if _, _, err := stranger.Children("/ensauth/" + greeter + "/providers"); !errors.Is(err, zk.ErrNoAuth) {
		t.Errorf("unauthenticated list: %v, want ErrNoAuth", err)
	}
	// The same user, in another session, subscribes and sees the provider.
	cons := newEnsembleRegistry(t, "admin:s3cret@"+ens.ConnectString(), "group=ensauth")
	rec := newRecorder()
	if err := cons.Subscribe(ctx, subscribeURL(greeter, ""), rec); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "providers", settle, hasExactly(p))
}

// testEnsembleMemberKill: a provider's session survives the crash of the
// member it is connected to and then of the leader; its ephemeral leaf
// stays, the subscriber's list never flaps, and new registrations work.
func testEnsembleMemberKill(t *testing.T, ens *apachezk.Ensemble) {
	ctx := context.Background()
	prov := newEnsembleRegistry(t, ens.ConnectString(), "group=enskill")
	sub := newEnsembleRegistry(t, ens.ConnectString(), "group=enskill")
	rec := newRecorder()
	p1 := providerURL(20880, greeter, "1.0.0")
	if err := prov.Register(ctx, p1); err != nil {
		t.Fatal(err)
	}
	// The subscriber's session may sit on a member that has not applied
	// the create yet: the watch-driven reads must still converge.
	if err := sub.Subscribe(ctx, subscribeURL(greeter, "1.0.0"), rec); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, "providers", settle, hasExactly(p1))
	provSession, subSession := prov.conn.SessionID(), sub.conn.SessionID()
	leaf := prov.urlPath(p1)

	// 1. Crash the member serving the provider's session.
	victim := memberOf(t, ens, prov.conn)
	t.Logf("provider session 0x%x on member %d, subscriber 0x%x on member %d, leader %d",
		provSession, victim, subSession, memberOf(t, ens, sub.conn), ens.Leader())
	p2 := providerURL(20881, greeter, "1.0.0")
	survive(t, ens, victim, prov, sub, rec, leaf, p1, p2)

	// 2. Bring it back, then crash the leader: two members stay, a new
	// leader is elected, and the sessions ride through the election.
	ens.Restart(victim)
	if mode, err := ens.Mode(victim); err != nil || mode != "follower" {
		t.Errorf("restarted member %d: mode %q, %v; want follower", victim, mode, err)
	}
	leader := ens.Leader()
	p3 := providerURL(20882, greeter, "1.0.0")
	survive(t, ens, leader, prov, sub, rec, leaf, p1, p2, p3)
	if got := ens.Leader(); got == leader {
		t.Errorf("leader still %d after it was killed", got)
	}

	for _, r := range []struct {
		name    string
		reg     *Registry
		session int64
	}{{"provider", prov, provSession}, {"subscriber", sub, subSession}} {
		if got := r.reg.conn.SessionID(); got != r.session {
			t.Errorf("%s session changed from 0x%x to 0x%x: it expired", r.name, r.session, got)
		}
	}
}

// survive kills member victim and checks that both registries reconnect
// within their sessions, that the provider's first leaf is still owned by
// its session on every running member, that the subscriber's list does not
// change until the newest URL (last of want) is registered, and that it
// then holds exactly want.
func survive(t *testing.T, ens *apachezk.Ensemble, victim int, prov, sub *Registry, rec *recorder, leaf string, want ...*url.URL) {
	t.Helper()
	before, added := want[:len(want)-1], want[len(want)-1]
	provSession, subSession := prov.conn.SessionID(), sub.conn.SessionID()
	rec.drain()

	killed := time.Now()
	ens.Stop(victim)
	leader := ens.Leader()
	elected := time.Since(killed)
	for _, r := range []*Registry{prov, sub} {
		waitUntil(t, settle, "registry session back on a running member", func() bool {
			m := ens.MemberOf(r.conn.SessionID())
			return m != 0 && m != victim && r.conn.State() == zk.StateHasSession
		})
	}
	if prov.conn.SessionID() != provSession || sub.conn.SessionID() != subSession {
		t.Fatalf("sessions changed after member %d was killed: provider 0x%x → 0x%x, subscriber 0x%x → 0x%x",
			victim, provSession, prov.conn.SessionID(), subSession, sub.conn.SessionID())
	}
	t.Logf("member %d killed: leader %d after %s, both sessions reconnected after %s",
		victim, leader, elected.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))

	// The leaf survived the crash, still ephemeral and still ours, on
	// every member that runs (after sync: they may lag).
	for id := 1; id <= ens.Size(); id++ {
		if !ens.Running(id) {
			continue
		}
		raw := memberConn(t, ens, id)
		syncPath(t, raw, leaf)
		ok, stat, err := raw.Exists(leaf)
		if err != nil || !ok {
			t.Fatalf("member %d: provider leaf after kill of %d: exists=%v, %v", id, victim, ok, err)
		}
		if stat.EphemeralOwner != provSession {
			t.Errorf("member %d: leaf owned by 0x%x, want the provider's session 0x%x", id, stat.EphemeralOwner, provSession)
		}
		raw.Close()
	}

	// A new registration after the kill works, and nothing else was seen
	// before it: no flap to an empty or partial list.
	if err := prov.Register(context.Background(), added); err != nil {
		t.Fatalf("register after kill of member %d: %v", victim, err)
	}
	deadline := time.After(settle)
	for {
		select {
		case n := <-rec.ch:
			if n.Category != "providers" {
				continue
			}
			if hasExactly(want...)(n.URLs) {
				return
			}
			if !hasExactly(before...)(n.URLs) {
				t.Fatalf("subscriber saw providers %v after kill of member %d; want %v, then %v",
					urlStrings(n.URLs), victim, urlStrings(before), urlStrings(want))
			}
		case <-deadline:
			t.Fatalf("subscriber did not see %v within %s after kill of member %d", urlStrings(want), settle, victim)
		}
	}
}

// newEnsembleRegistry connects a registry to hosts (a multi-host URL
// authority, with credentials if any) and waits for its session.
func newEnsembleRegistry(t *testing.T, hosts, params string) *Registry {
	t.Helper()
	r, err := New(url.MustParse("zookeeper://"+hosts+"?"+ensembleSession+"&"+params), Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), settle)
	defer cancel()
	if err := r.WaitConnected(ctx); err != nil {
		t.Fatal(err)
	}
	return r
}

// memberConn is a plain client pinned to member id.
func memberConn(t *testing.T, ens *apachezk.Ensemble, id int) *zk.Conn {
	t.Helper()
	return rawConn(t, ens.Addr(id))
}

// memberOf is the member serving c's session according to the servers
// (4lw cons), cross-checked with the client's own view.
func memberOf(t *testing.T, ens *apachezk.Ensemble, c *zk.Conn) int {
	t.Helper()
	var id int
	waitUntil(t, settle, "a member listing the session", func() bool {
		id = ens.MemberOf(c.SessionID())
		return id != 0
	})
	if got := c.Server(); got != ens.Addr(id) {
		t.Errorf("client says it is connected to %s, member %d (%s) lists its session", got, id, ens.Addr(id))
	}
	return id
}

// syncPath makes c's member catch up with the leader: another session's
// writes are visible to c only after a sync.
func syncPath(t *testing.T, c *zk.Conn, path string) {
	t.Helper()
	if _, err := c.Sync(path); err != nil {
		t.Fatalf("sync %s: %v", path, err)
	}
}

package embeddedzk_test

// The conformance suite runs ONE set of cases against two servers: a real
// Apache ZooKeeper 3.8 ("apache") and the embedded server ("embedded"). A
// case asserts what a client can observe; where the issue deliberately asks
// for something Apache does not do, the case branches on target.name with a
// comment. Failures on the embedded target are also written to
// /tmp/conformance-failures.txt for the server's author.

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
)

// confTick is the tickTime of both servers: short, so that session expiry
// cases take a couple of seconds (Apache clamps timeouts to [2, 20] × tick).
const confTick = 500 * time.Millisecond

// confWhitelist is both servers' 4lw.commands.whitelist: the words the cases
// use, without srvr, which both must answer anyway.
var confWhitelist = []string{"ruok", "isro", "mntr"}

// confSuperAuth is the super user's user:password on both servers, and
// confSuperDigest its zookeeper.DigestAuthenticationProvider.superDigest.
const (
	confSuperAuth   = "super:let-me-in"
	confSuperDigest = "super:s5caZZwyQb8Fm/rvif+fXNQqA4k=" // printf %s super:let-me-in | openssl dgst -binary -sha1 | base64
)

// clientTimeout is the session timeout of ordinary clients: long enough that
// a busy 2-core machine never drops a session by accident.
const clientTimeout = 8 * time.Second

const failuresFile = "/tmp/conformance-failures.txt"

// target is one server under test.
type target struct {
	name string // "apache" or "embedded"
	addr string
	pid  int // the server's process, where a benchmark measures its CPU
}

// conformanceCase is one behaviour, checked the same way on every target.
type conformanceCase struct {
	name string
	run  func(t *ct, tg target)
}

// ct records failure messages in addition to reporting them, so the suite can
// write a failure summary for the embedded target.
type ct struct {
	testing.TB
	rec *failureLog
}

func (c *ct) record(msg string) { c.rec.add(c.Name(), msg) }

func (c *ct) Errorf(format string, args ...any) {
	c.TB.Helper()
	c.record(fmt.Sprintf(format, args...))
	c.TB.Errorf(format, args...)
}

func (c *ct) Fatalf(format string, args ...any) {
	c.TB.Helper()
	c.record(fmt.Sprintf(format, args...))
	c.TB.Fatalf(format, args...)
}

func (c *ct) Error(args ...any) {
	c.TB.Helper()
	c.record(fmt.Sprint(args...))
	c.TB.Error(args...)
}

func (c *ct) Fatal(args ...any) {
	c.TB.Helper()
	c.record(fmt.Sprint(args...))
	c.TB.Fatal(args...)
}

type failureLog struct {
	mu   sync.Mutex
	msgs map[string][]string
}

func (l *failureLog) add(name, msg string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.msgs == nil {
		l.msgs = map[string][]string{}
	}
	l.msgs[name] = append(l.msgs[name], msg)
}

// write replaces the failures file with this run's embedded failures.
func (l *failureLog) write(t testing.TB) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "embedded ZooKeeper conformance failures, %s\n", time.Now().Format(time.RFC3339))
	names := make([]string, 0, len(l.msgs))
	for n := range l.msgs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "\n%s\n", n)
		for _, m := range l.msgs[n] {
			fmt.Fprintf(&b, "    %s\n", strings.ReplaceAll(m, "\n", "\n    "))
		}
	}
	if len(names) == 0 {
		b.WriteString("\nnone\n")
	}
	if err := os.WriteFile(failuresFile, []byte(b.String()), 0o644); err != nil {
		t.Logf("write %s: %v", failuresFile, err)
	}
}

// TestConformance starts each server once and runs every case against it.
func TestConformance(t *testing.T) {
	targets := []struct {
		name  string
		start func(t *testing.T) string
	}{
		{"apache", func(t *testing.T) string {
			return apachezk.Start(t, apachezk.Options{TickTime: confTick, ExtraConfig: []string{
				// Later lines win: this replaces the harness's "*".
				"4lw.commands.whitelist=" + strings.Join(confWhitelist, ", "),
				// Unknown zoo.cfg keys become zookeeper.* system properties.
				"DigestAuthenticationProvider.superDigest=" + confSuperDigest,
			}}).Addr()
		}},
		{"embedded", func(t *testing.T) string {
			return startEmbeddedConfig(t, embeddedzk.Config{
				TickTime: confTick, FourLetterWhitelist: confWhitelist, SuperDigest: confSuperDigest,
			}).String()
		}},
	}
	cases := conformanceCases()
	for _, tgt := range targets {
		t.Run(tgt.name, func(t *testing.T) {
			tg := target{name: tgt.name, addr: tgt.start(t)}
			rec := &failureLog{}
			// The group returns only when every parallel case has finished.
			t.Run("cases", func(t *testing.T) {
				for _, c := range cases {
					t.Run(c.name, func(t *testing.T) {
						t.Parallel()
						c.run(&ct{TB: t, rec: rec}, tg)
					})
				}
			})
			if tg.name == "embedded" {
				rec.write(t)
			}
		})
	}
}

func conformanceCases() []conformanceCase {
	var all []conformanceCase
	for _, group := range [][]conformanceCase{
		nodeCases(), aclCases(), watchCases(), sessionCases(), serverCases(),
	} {
		all = append(all, group...)
	}
	return all
}

// casePath turns a test name into a root path unique to that case.
func casePath(t testing.TB) string {
	name := t.Name()
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	return "/" + regexp.MustCompile(`[^A-Za-z0-9_-]`).ReplaceAllString(name, "_")
}

// nopLogger keeps go-zookeeper's connection chatter out of test output.
type nopLogger struct{}

func (nopLogger) Printf(string, ...any) {}

// connect opens a go-zookeeper session and waits until it is established.
func connect(t testing.TB, tg target) *zk.Conn {
	t.Helper()
	conn, _ := connectEvents(t, tg, nil)
	return conn
}

// connectEvents is connect that also returns every event the client sees,
// watch notifications included (go-zookeeper reports each server
// notification once through the event callback, whatever the watchers).
// A nil dialer means a plain TCP dial.
func connectEvents(t testing.TB, tg target, dialer zk.Dialer) (*zk.Conn, <-chan zk.Event) {
	t.Helper()
	if dialer == nil {
		dialer = net.DialTimeout
	}
	events := make(chan zk.Event, 1024)
	conn, _, err := zk.Connect([]string{tg.addr}, clientTimeout,
		zk.WithLogger(nopLogger{}),
		zk.WithLogInfo(false),
		zk.WithDialer(dialer),
		zk.WithEventCallback(func(ev zk.Event) {
			select {
			case events <- ev:
			default: // never block the client's receive loop
			}
		}))
	if err != nil {
		t.Fatalf("connect %s: %v", tg.addr, err)
	}
	t.Cleanup(conn.Close)
	waitSession(t, conn, events)
	return conn, events
}

// waitSession drains events until the client has a session.
func waitSession(t testing.TB, conn *zk.Conn, events <-chan zk.Event) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for conn.State() != zk.StateHasSession {
		select {
		case <-events:
		case <-time.After(20 * time.Millisecond):
		case <-deadline:
			t.Fatalf("no session after 10s (state %v)", conn.State())
		}
	}
}

// nextNodeEvent returns the next watch notification (not a session state
// change) or fails after timeout.
func nextNodeEvent(t testing.TB, events <-chan zk.Event, timeout time.Duration) zk.Event {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev := <-events:
			if ev.Type != zk.EventSession {
				return ev
			}
		case <-deadline:
			t.Fatalf("no watch event within %s", timeout)
			return zk.Event{}
		}
	}
}

// noNodeEvent fails if a watch notification arrives within d.
func noNodeEvent(t testing.TB, events <-chan zk.Event, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case ev := <-events:
			if ev.Type != zk.EventSession {
				t.Errorf("unexpected event %v on %s", ev.Type, ev.Path)
			}
		case <-deadline:
			return
		}
	}
}

func mustCreate(t testing.TB, conn *zk.Conn, path string, data []byte, flags int32) string {
	t.Helper()
	p, err := conn.Create(path, data, flags, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatalf("create %s: %v", path, err)
	}
	return p
}

func mustStat(t testing.TB, conn *zk.Conn, path string) *zk.Stat {
	t.Helper()
	ok, st, err := conn.Exists(path)
	if err != nil || !ok {
		t.Fatalf("exists %s = %v, %v; want the node", path, ok, err)
	}
	return st
}

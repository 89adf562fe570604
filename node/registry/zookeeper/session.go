package zookeeper

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/node/url"
)

// ParseAddress reads a registry address as [registry] address holds it,
// zookeeper://[user:password@]host:port[,host:port...][?group=&session=...].
// Its errors show the address with its secrets hidden.
func ParseAddress(address string) (*url.URL, error) {
	u, err := url.Parse(address)
	if err != nil {
		return nil, fmt.Errorf("registry address: %w", err)
	}
	if u.Protocol() != "zookeeper" {
		return nil, fmt.Errorf("registry %s: only zookeeper:// registries are supported", u.Redacted())
	}
	return u, nil
}

// Open connects a Registry to the registry at address (see ParseAddress)
// and waits up to wait for its first session; 0 does not wait. When no
// session comes it fails, unless opts.CacheFile is set: a consumer then
// starts from its cache file, and the registry connects when it can. This
// is how the provider and consumer roles and the console open theirs.
func Open(ctx context.Context, address string, wait time.Duration, opts Options) (*Registry, error) {
	u, err := ParseAddress(address)
	if err != nil {
		return nil, err
	}
	r, err := New(u, opts)
	if err != nil {
		return nil, err
	}
	if wait <= 0 {
		return r, nil
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	err = r.WaitConnected(wctx)
	cancel()
	if err != nil && opts.CacheFile == "" {
		r.Close()
		return nil, fmt.Errorf("%w; is the registry running?", err)
	}
	return r, nil
}

// Session is one ZooKeeper session with the ensemble a registry URL names:
// go-zookeeper's connection, authenticated with the URL's digest
// credentials, and a Queue that receives the session's events in order
// without ever blocking go-zookeeper. Its owner drains the queue on one
// goroutine: a Registry does, and so does the console's catalog.
//
// go-zookeeper keeps credentials only once the server has accepted them
// (and then sends them again after every reconnection); offered before
// the ensemble answers, they fail and are forgotten. So a session with a
// user adds them at its first session, and holds that session's events,
// and counts as lost, until they are accepted: its owner's work (which
// starts on the session event) then runs authenticated.
type Session struct {
	conn  *zk.Conn
	set   settings
	queue Queue
	// lostAt is when the session was last lost (its creation before the
	// first one), in Unix nanoseconds; 0 while it has one.
	lostAt atomic.Int64

	mu       sync.Mutex
	needAuth bool       // a user is set and go-zookeeper has not kept the credentials yet
	authing  bool       // an AddAuth is in flight
	held     []zk.Event // events that came while needAuth, in order
}

// SessionOptions are the parts of a session that do not travel in its URL.
type SessionOptions struct {
	// Logger receives go-zookeeper's log lines, at debug level (it logs
	// every reconnection attempt, which owners report themselves).
	// Default slog.Default().
	Logger *slog.Logger
	// Dialer opens connections to ZooKeeper; tests wrap it to cut the
	// link. Default net.DialTimeout.
	Dialer zk.Dialer
}

// Dial connects to the registry at address (see ParseAddress) without
// waiting for the session, for a reader that follows the registry's
// nodes itself (the console's catalog); roles use Open.
func Dial(address string, opts SessionOptions) (*Session, error) {
	u, err := ParseAddress(address)
	if err != nil {
		return nil, err
	}
	set, err := parseSettings(u)
	if err != nil {
		return nil, err
	}
	return dial(u, set, opts)
}

func dial(u *url.URL, set settings, opts SessionOptions) (*Session, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Dialer == nil {
		opts.Dialer = net.DialTimeout
	}
	s := &Session{set: set, needAuth: set.user != ""}
	s.lostAt.Store(time.Now().UnixNano())
	s.queue.signal = make(chan struct{}, 1)
	conn, _, err := zk.Connect(set.servers, set.sessionTimeout,
		zk.WithLogger(zkLogger{opts.Logger}),
		zk.WithLogInfo(false),
		zk.WithEventCallback(s.onEvent),
		zk.WithDialer(opts.Dialer))
	if err != nil {
		return nil, fmt.Errorf("zookeeper registry %s: %w", u.Redacted(), err)
	}
	s.mu.Lock()
	s.conn = conn // the first events may come before Connect returns
	s.authenticateHeld()
	s.mu.Unlock()
	return s, nil
}

// onEvent receives every event of the session, on go-zookeeper's
// goroutine, which it must not block: it holds events until the
// credentials are accepted, notes when the session is lost, and queues
// the event.
func (s *Session) onEvent(ev zk.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.needAuth {
		s.held = append(s.held, ev)
		s.authenticateHeld()
		return
	}
	s.deliver(ev)
}

// authenticateHeld starts offering the credentials when the last session
// state held says the session is established; s.mu is held.
func (s *Session) authenticateHeld() {
	if !s.needAuth || s.authing || s.conn == nil {
		return
	}
	for i := len(s.held) - 1; i >= 0; i-- {
		if ev := s.held[i]; ev.Type == zk.EventSession {
			if ev.State == zk.StateHasSession {
				s.authing = true
				go s.authenticate(s.conn)
			}
			return
		}
	}
}

// authenticate offers the credentials on the session that was just
// established, and releases the held events once they are kept. If the
// connection drops first, the next session event tries again.
func (s *Session) authenticate(conn *zk.Conn) {
	err := conn.AddAuth("digest", []byte(s.set.user+":"+s.set.password))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authing = false
	if err != nil {
		return // the connection went; the next session event tries again
	}
	s.needAuth = false
	for _, ev := range s.held {
		s.deliver(ev)
	}
	s.held = nil
}

// deliver notes session state and queues ev; s.mu is held, so events are
// queued in the order they came.
func (s *Session) deliver(ev zk.Event) {
	if ev.Type == zk.EventSession {
		if ev.State == zk.StateHasSession {
			s.lostAt.Store(0)
		} else {
			s.lostAt.CompareAndSwap(0, time.Now().UnixNano())
		}
	}
	s.queue.Push(Task{Event: ev})
}

// Conn is the session's connection.
func (s *Session) Conn() *zk.Conn { return s.conn }

// Queue is where the session's events arrive.
func (s *Session) Queue() *Queue { return &s.queue }

// Layout is where the registry keeps what.
func (s *Session) Layout() Layout { return s.set.Layout }

// Servers are the ensemble's host:port addresses.
func (s *Session) Servers() []string { return slices.Clone(s.set.servers) }

// LostFor is how long the session has been lost (or not yet established);
// 0 while it is established.
func (s *Session) LostFor() time.Duration {
	since := s.lostAt.Load()
	if since == 0 {
		return 0
	}
	return time.Since(time.Unix(0, since))
}

// Close ends the session, which removes its ephemeral nodes at once.
func (s *Session) Close() { s.conn.Close() }

// A Task is one item of a session's Queue: an event of the session, or a
// function its owner wants run in order with the events (Run, then close
// Done).
type Task struct {
	Event zk.Event
	Run   func()
	Done  chan struct{}
}

// Queue holds a session's tasks for its owner's goroutine. It is unbounded
// because go-zookeeper's event callback must never block, and losing a
// watch event would lose a change for good.
type Queue struct {
	mu     sync.Mutex
	items  []Task
	signal chan struct{} // capacity 1: "items is not empty"
}

// Push adds t at the end.
func (q *Queue) Push(t Task) {
	q.mu.Lock()
	q.items = append(q.items, t)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// Ready receives when tasks may be waiting.
func (q *Queue) Ready() <-chan struct{} { return q.signal }

// TakeAll removes and returns every waiting task, oldest first.
func (q *Queue) TakeAll() []Task {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}

// zkLogger sends go-zookeeper's log lines to slog at debug level.
type zkLogger struct{ log *slog.Logger }

func (l zkLogger) Printf(format string, args ...any) {
	l.log.Debug("go-zookeeper: " + fmt.Sprintf(format, args...))
}

// Package embeddedzk is a ZooKeeper-wire-compatible server for one machine:
// stock ZooKeeper clients (go-zookeeper, the Java client, Curator) connect to
// it as to an Apache ZooKeeper 3.8 standalone server.
//
// The pieces: wire (jute codec and records), tree (data tree and
// transactions), watch (watch tables), session (session clock) and storage
// (transaction log and snapshots). Server ties them together: one reader and
// one writer goroutine per connection, writes applied one at a time under a
// lock in zxid order, every outgoing frame held back until the log says the
// state it reveals is durable.
package embeddedzk

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk/session"
	"github.com/dubbo-lab/dubbo/embeddedzk/storage"
	"github.com/dubbo-lab/dubbo/embeddedzk/tree"
	"github.com/dubbo-lab/dubbo/embeddedzk/watch"
)

// Server is one embedded ZooKeeper server.
type Server struct {
	cfg    Config
	logger *slog.Logger
	ln     net.Listener
	store  *storage.Log

	// mu guards tree: writes hold it exclusively, reads shared. Frames that
	// reveal state are queued while it is held, so each connection sees
	// events and replies in the order the changes happened.
	mu        sync.RWMutex
	tree      *tree.Tree
	sinceSnap int
	lastSnap  time.Time
	lastZxid  atomic.Int64 // mirror of tree.LastZxid for lock-free pings
	// baseZxid is the zxid restored at startup: durable by definition, even
	// when purged log files leave the log itself with nothing to report.
	baseZxid int64

	watches  *watch.Manager
	sessions *session.Tracker

	connsMu sync.Mutex
	conns   map[*conn]struct{}
	perIP   map[string]int

	stats   serverStats
	started time.Time

	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup
	snapping  atomic.Bool
	snapWG    sync.WaitGroup

	handshakeTimeout time.Duration
	words            map[string]bool // enabled four-letter words; read-only
}

// New opens (or creates) the data directory, replays it and binds the
// listener. Call Serve to accept clients and Close to release everything.
func New(cfg Config, logger *slog.Logger) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("registry server config: %w", err)
	}
	if logger == nil {
		logger = slog.Default()
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, fmt.Errorf("create data dir %s: %w", cfg.DataDir, err)
	}
	store, err := storage.OpenLog(cfg.DataDir, storage.LogOptions{Fsync: cfg.FsyncOn(), Logger: logger, RecoverTruncate: cfg.RecoverTruncate})
	if err != nil {
		return nil, fmt.Errorf("open transaction log in %s: %w%s", cfg.DataDir, err, recoverHint(err))
	}
	t, err := restore(cfg.DataDir, store, logger)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("%w%s", err, recoverHint(err))
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("listen on %s: %w", cfg.Listen, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg: cfg, logger: logger, ln: ln, store: store, tree: t,
		watches:  watch.New(),
		sessions: session.NewTracker(cfg.TickTime, cfg.MinSessionTimeout, cfg.MaxSessionTimeout),
		conns:    make(map[*conn]struct{}),
		perIP:    make(map[string]int),
		started:  time.Now(),
		lastSnap: time.Now(),
		ctx:      ctx, cancel: cancel,

		handshakeTimeout: cmp.Or(cfg.handshakeTimeout, handshakeTimeout),
		words:            cfg.enabledWords(),
	}
	s.lastZxid.Store(t.LastZxid())
	s.baseZxid = t.LastZxid()
	// Restored sessions get a full timeout from now to come back.
	now := time.Now()
	for id, info := range t.Sessions() {
		s.sessions.Add(id, info.Passwd, time.Duration(info.Timeout)*time.Millisecond, now)
	}
	return s, nil
}

// recoverHint tells the operator how to start on a damaged log.
func recoverHint(err error) string {
	var cerr *storage.CorruptError
	if !errors.As(err, &cerr) {
		return ""
	}
	return fmt.Sprintf(". The registry did not start, and changed nothing. Copy the data dir first; "+
		"then registry.server.recover-truncate = true (--set registry.server.recover-truncate=true) "+
		"starts it from the writes before offset %d, moving the damaged part and everything after it "+
		"to side files next to %s (*.damaged-*) for inspection", cerr.Offset, cerr.File)
}

// restore loads the newest snapshot and replays the log after it.
func restore(dir string, store *storage.Log, logger *slog.Logger) (*tree.Tree, error) {
	t := tree.New()
	snapZxid, r, err := storage.LatestSnapshot(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		snapZxid = 0
	case err != nil:
		return nil, fmt.Errorf("open snapshot in %s: %w", dir, err)
	default:
		t, err = tree.Load(r)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("load snapshot %#x in %s: %w", snapZxid, dir, err)
		}
	}
	replayed := 0
	err = store.Replay(t.LastZxid(), func(zxid int64, rec []byte) error {
		x, err := tree.DecodeTxn(rec)
		if err != nil {
			return fmt.Errorf("decode txn %#x: %w", zxid, err)
		}
		if _, err := t.Apply(x); err != nil {
			return err
		}
		replayed++
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("replay log in %s: %w", dir, err)
	}
	if snapZxid > 0 || replayed > 0 {
		logger.Info("registry data restored", "dir", dir, "snapshot_zxid", fmt.Sprintf("%#x", snapZxid),
			"replayed", replayed, "zxid", fmt.Sprintf("%#x", t.LastZxid()), "nodes", t.NodeCount())
	}
	return t, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts clients until ctx is done or Close is called. It returns
// nil on a clean stop.
func (s *Server) Serve(ctx context.Context) error {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.tickLoop()
	}()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()
	s.logger.Info("registry server listening", "addr", s.ln.Addr().String(), "data_dir", s.cfg.DataDir)
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			s.Close()
			return fmt.Errorf("accept on %s: %w", s.ln.Addr(), err)
		}
		s.accept(nc)
	}
}

func (s *Server) accept(nc net.Conn) {
	ip := remoteIP(nc)
	s.connsMu.Lock()
	if s.ctx.Err() != nil {
		s.connsMu.Unlock()
		nc.Close()
		return
	}
	if s.cfg.MaxClientCnxns > 0 && s.perIP[ip] >= s.cfg.MaxClientCnxns {
		s.connsMu.Unlock()
		s.logger.Warn("too many connections from one address, refusing", "ip", ip, "limit", s.cfg.MaxClientCnxns)
		nc.Close()
		return
	}
	c := newConn(s, nc, ip)
	s.conns[c] = struct{}{}
	s.perIP[ip]++
	s.wg.Add(2)
	s.connsMu.Unlock()
	if tc, ok := nc.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	go func() { defer s.wg.Done(); c.readLoop() }()
	go func() { defer s.wg.Done(); c.writeLoop() }()
}

func (s *Server) forget(c *conn) {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	if _, ok := s.conns[c]; !ok {
		return
	}
	delete(s.conns, c)
	if s.perIP[c.ip]--; s.perIP[c.ip] <= 0 {
		delete(s.perIP, c.ip)
	}
}

func (s *Server) connList() []*conn {
	s.connsMu.Lock()
	defer s.connsMu.Unlock()
	out := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

func remoteIP(nc net.Conn) string {
	host, _, err := net.SplitHostPort(nc.RemoteAddr().String())
	if err != nil {
		return nc.RemoteAddr().String()
	}
	return host
}

// Close stops accepting, closes every connection, writes a final snapshot
// when there are unsnapshotted changes, and flushes and closes the log. It
// is idempotent. Sessions stay in the data: clients can resume them after a
// restart within their timeout.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.connsMu.Lock()
		s.cancel()
		s.connsMu.Unlock()
		lnErr := s.ln.Close()
		for _, c := range s.connList() {
			c.close()
		}
		s.wg.Wait()
		s.snapWG.Wait()
		s.mu.Lock()
		pending := s.sinceSnap > 0
		s.mu.Unlock()
		var snapErr error
		if pending {
			snapErr = s.snapshot(false)
		}
		logErr := s.store.Close()
		if errors.Is(lnErr, net.ErrClosed) {
			lnErr = nil
		}
		s.closeErr = errors.Join(lnErr, snapErr, logErr)
	})
	return s.closeErr
}

// commit logs a transaction the tree has just applied and fires its
// watches. The caller holds s.mu exclusively.
func (s *Server) commit(x *tree.Txn, trig []tree.Trigger) {
	if x == nil {
		return
	}
	if err := s.store.Append(x.Zxid, x.Encode()); err != nil {
		// The log is fail-stop: replies wait for durability that never comes
		// and their connections close; the error says why.
		s.logger.Error("append to transaction log failed", "zxid", fmt.Sprintf("%#x", x.Zxid), "err", err)
	}
	s.lastZxid.Store(x.Zxid)
	s.sinceSnap++
	for _, tr := range trig {
		for _, w := range s.watches.Trigger(tr.Path, tr.Type) {
			w.(*conn).queueEvent(tr.Path, tr.Type, x.Zxid)
		}
	}
	if s.cfg.SnapshotCount > 0 && s.sinceSnap >= s.cfg.SnapshotCount {
		s.startSnapshot()
	}
}

// nextZxid is the zxid the next transaction gets; the caller holds s.mu.
func (s *Server) nextZxid() int64 { return s.tree.LastZxid() + 1 }

// tickLoop expires sessions, reaps containers and TTL nodes, and takes
// timed snapshots, once per tick. While the log cannot be written it does
// none of these: clients cannot reach their sessions then, through no fault
// of theirs, so the sessions get a full timeout once it can, as after a
// restart.
func (s *Server) tickLoop() {
	tk := time.NewTicker(s.cfg.TickTime)
	defer tk.Stop()
	logFailing := false
	for {
		select {
		case <-s.ctx.Done():
			return
		case now := <-tk.C:
			if err := s.store.Health(); err != nil {
				if !logFailing {
					s.logger.Error("transaction log cannot be written; refusing clients until it can", "err", err)
				}
				logFailing = true
				continue
			}
			if logFailing {
				logFailing = false
				n := 0
				for _, si := range s.sessions.List() {
					if s.sessions.Touch(si.ID, now) {
						n++
					}
				}
				s.logger.Info("transaction log writable again; serving clients", "sessions_renewed", n)
			}
			for _, id := range s.sessions.Expired(now) {
				s.expire(id)
			}
			s.reap()
			s.mu.Lock()
			if s.sinceSnap > 0 && s.cfg.SnapshotInterval > 0 && time.Since(s.lastSnap) >= s.cfg.SnapshotInterval {
				s.startSnapshot()
			}
			s.mu.Unlock()
		}
	}
}

// expire closes a timed-out session: its ephemerals go (watchers of others
// are told) and its connection is closed without a reply.
func (s *Server) expire(id int64) {
	s.mu.Lock()
	if s.tree.HasSession(id) {
		x, trig := s.tree.CloseSession(id, s.nextZxid(), time.Now().UnixMilli())
		s.commit(x, trig)
	}
	s.mu.Unlock()
	owner := s.sessions.Owner(id)
	s.sessions.Remove(id)
	s.logger.Debug("session expired", "session", fmt.Sprintf("%#x", id))
	if c, ok := owner.(*conn); ok {
		c.close()
	}
}

func (s *Server) reap() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().UnixMilli()
	for _, p := range s.tree.Reapable(now) {
		x, trig := s.tree.Reap(p, s.nextZxid(), now)
		s.commit(x, trig)
	}
}

// startSnapshot copies the state (caller holds s.mu exclusively), rolls
// the log so later records start a new file, and writes the copy in the
// background.
func (s *Server) startSnapshot() {
	if !s.snapping.CompareAndSwap(false, true) {
		return
	}
	im := s.tree.Image()
	if err := s.store.Roll(); err != nil {
		s.logger.Error("roll transaction log failed", "err", err)
	}
	s.sinceSnap = 0
	s.lastSnap = time.Now()
	s.snapWG.Add(1)
	go func() {
		defer s.snapWG.Done()
		defer s.snapping.Store(false)
		if err := s.writeImage(im); err != nil {
			s.logger.Error("snapshot failed", "err", err)
		}
	}()
}

// snapshot takes and writes a snapshot synchronously.
func (s *Server) snapshot(roll bool) error {
	s.mu.Lock()
	im := s.tree.Image()
	if roll {
		if err := s.store.Roll(); err != nil {
			s.mu.Unlock()
			return fmt.Errorf("roll log: %w", err)
		}
	}
	s.sinceSnap = 0
	s.lastSnap = time.Now()
	s.mu.Unlock()
	return s.writeImage(im)
}

func (s *Server) writeImage(im *tree.Image) error {
	// Snapshot only what the log already holds, so no snapshot is ahead of it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.waitDurable(ctx, im.LastZxid); err != nil {
		return fmt.Errorf("wait for log before snapshot %#x: %w", im.LastZxid, err)
	}
	start := time.Now()
	err := storage.WriteSnapshot(s.cfg.DataDir, im.LastZxid, func(w io.Writer) error {
		_, err := im.WriteTo(w)
		return err
	})
	if err != nil {
		return fmt.Errorf("write snapshot %#x: %w", im.LastZxid, err)
	}
	s.logger.Debug("snapshot written", "zxid", fmt.Sprintf("%#x", im.LastZxid), "nodes", im.NodeCount(), "took", time.Since(start))
	if err := storage.Purge(s.cfg.DataDir, 3); err != nil {
		return fmt.Errorf("purge old snapshots: %w", err)
	}
	return nil
}

// notServing says why the server refuses clients: the transaction log
// cannot be written (a full disk), so nothing new can be acknowledged, and
// state not yet on disk must not be shown. nil while it serves.
func (s *Server) notServing() error { return s.store.Health() }

// waitDurable blocks until the state up to zxid is on disk.
func (s *Server) waitDurable(ctx context.Context, zxid int64) error {
	if zxid <= s.baseZxid || zxid <= s.store.DurableZxid() {
		return nil
	}
	return s.store.WaitDurable(ctx, zxid)
}

// caller builds the tree.Caller for a connection.
func (c *conn) caller() tree.Caller {
	return tree.Caller{Session: c.sessionID.Load(), IDs: c.authIDs()}
}

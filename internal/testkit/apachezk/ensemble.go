package apachezk

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnsembleOptions configure a quorum of servers on one machine. Zero values
// mean the documented defaults.
type EnsembleOptions struct {
	// Size is the number of members. Default 3.
	Size int
	// TickTime is ZooKeeper's tickTime. Default 2s. It also paces leader
	// election and syncing, so a short tick makes failover tests quicker.
	TickTime time.Duration
	// MinSessionTimeout and MaxSessionTimeout override the [2, 20] × tick
	// clamp bounds of session timeouts.
	MinSessionTimeout, MaxSessionTimeout time.Duration
	// InitLimit and SyncLimit are in ticks. Default 10 and 5, as Apache's
	// zoo_sample.cfg.
	InitLimit, SyncLimit int
	// DisableFsync sets forceSync=no. Default: fsync on, as Apache.
	DisableFsync bool
	// ExtraConfig lines are appended to every member's zoo.cfg verbatim.
	ExtraConfig []string
	// StartTimeout bounds StartEnsemble, Restart and Leader. Default 45s.
	StartTimeout time.Duration
}

// Ensemble is a running quorum of Apache ZooKeeper servers
// (QuorumPeerMain) on 127.0.0.1, one process per member. Members are
// numbered by their myid, 1 to Size, as in zoo.cfg's server.N lines and the
// servers' own logs. Its methods are safe for concurrent use.
type Ensemble struct {
	t       testing.TB
	cp      string
	opts    EnsembleOptions
	members []*member // members[id-1]

	mu sync.Mutex // guards member.srv
}

// member is one server's fixed identity: ports, directories and config
// survive a Stop and are reused by Restart.
type member struct {
	id                                 int
	dir, dataDir, cfgPath              string
	clientPort, peerPort, electionPort int
	srv                                *Server // the current (or last) process
}

// ensembleJVM keeps three JVMs small and quick to start on a 2-core box.
var ensembleJVM = []string{"-Xmx128m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"}

const quorumMain = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// StartEnsemble starts opts.Size members in parallel, each with its own
// data dir, myid and client port, and waits until every member serves and
// exactly one is the leader. Every process is killed when the test ends.
// Without the jars the test is skipped (fails when CI=true), as Start.
func StartEnsemble(t testing.TB, opts EnsembleOptions) *Ensemble {
	t.Helper()
	cp := Classpath(t)
	if opts.Size == 0 {
		opts.Size = 3
	}
	if opts.Size < 1 {
		t.Fatalf("apachezk: ensemble size %d", opts.Size)
	}
	if opts.TickTime == 0 {
		opts.TickTime = 2 * time.Second
	}
	if opts.InitLimit == 0 {
		opts.InitLimit = 10
	}
	if opts.SyncLimit == 0 {
		opts.SyncLimit = 5
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 45 * time.Second
	}
	ports, err := freePorts(3 * opts.Size)
	if err != nil {
		t.Fatalf("apachezk: %v", err)
	}
	e := &Ensemble{t: t, cp: cp, opts: opts}
	root := t.TempDir()
	var servers []string
	for i := range opts.Size {
		m := &member{
			id:           i + 1,
			dir:          filepath.Join(root, "zk"+strconv.Itoa(i+1)),
			clientPort:   ports[3*i],
			peerPort:     ports[3*i+1],
			electionPort: ports[3*i+2],
		}
		m.dataDir = filepath.Join(m.dir, "data")
		m.cfgPath = filepath.Join(m.dir, "zoo.cfg")
		e.members = append(e.members, m)
		servers = append(servers, fmt.Sprintf("server.%d=127.0.0.1:%d:%d", m.id, m.peerPort, m.electionPort))
	}
	base := Options{
		TickTime:          opts.TickTime,
		MinSessionTimeout: opts.MinSessionTimeout,
		MaxSessionTimeout: opts.MaxSessionTimeout,
		DisableFsync:      opts.DisableFsync,
	}
	for _, m := range e.members {
		if err := os.MkdirAll(m.dataDir, 0o755); err != nil {
			t.Fatalf("apachezk: %v", err)
		}
		if err := os.WriteFile(filepath.Join(m.dataDir, "myid"), []byte(strconv.Itoa(m.id)+"\n"), 0o644); err != nil {
			t.Fatalf("apachezk: write myid: %v", err)
		}
		cfg := base.config(m.dataDir, m.clientPort)
		cfg = append(cfg,
			"initLimit="+strconv.Itoa(opts.InitLimit),
			"syncLimit="+strconv.Itoa(opts.SyncLimit),
			// A lone member must not fall back to standalone mode.
			"standaloneEnabled=false",
		)
		cfg = append(cfg, servers...)
		cfg = append(cfg, opts.ExtraConfig...)
		if err := os.WriteFile(m.cfgPath, []byte(strings.Join(cfg, "\n")+"\n"), 0o644); err != nil {
			t.Fatalf("apachezk: write zoo.cfg: %v", err)
		}
	}
	// All JVMs start before we wait for any: start-up is the slow part.
	for _, m := range e.members {
		if err := e.launch(m); err != nil {
			t.Fatalf("apachezk: member %d: %v", m.id, err)
		}
	}
	if _, err := e.waitQuorum(opts.StartTimeout); err != nil {
		t.Fatalf("apachezk: ensemble not ready: %v\n%s", err, e.report())
	}
	return e
}

// Size is the number of members, running or not.
func (e *Ensemble) Size() int { return len(e.members) }

// Addr is member id's client address, 127.0.0.1:port.
func (e *Ensemble) Addr(id int) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(e.member(id).clientPort))
}

// ConnectString lists every member's client address, as a ZooKeeper client
// takes it: "127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3".
func (e *Ensemble) ConnectString() string {
	addrs := make([]string, len(e.members))
	for i, m := range e.members {
		addrs[i] = e.Addr(m.id)
	}
	return strings.Join(addrs, ",")
}

// PID is the process id of member id's current (or last) process.
func (e *Ensemble) PID(id int) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.member(id).srv.PID()
}

// Running reports whether member id's process is alive.
func (e *Ensemble) Running(id int) bool {
	e.mu.Lock()
	srv := e.member(id).srv
	e.mu.Unlock()
	select {
	case <-srv.done:
		return false
	default:
		return true
	}
}

// Stop kills member id with SIGKILL, like a crash, and waits for the
// process to exit. It does not wait for the others to elect a leader; call
// Leader for that.
func (e *Ensemble) Stop(id int) {
	e.mu.Lock()
	srv := e.member(id).srv
	e.mu.Unlock()
	srv.Stop()
}

// Restart starts member id again (killing it first if it still runs) on
// the same ports and data dir, and waits until it serves as leader or
// follower and the running members agree on one leader.
func (e *Ensemble) Restart(id int) {
	e.t.Helper()
	e.Stop(id)
	m := e.member(id)
	if err := e.launch(m); err != nil {
		e.t.Fatalf("apachezk: restart member %d: %v", id, err)
	}
	if _, err := e.waitQuorum(e.opts.StartTimeout); err != nil {
		e.t.Fatalf("apachezk: member %d restarted, ensemble not ready: %v\n%s", id, err, e.report())
	}
}

// Leader waits until the running members agree on exactly one leader and
// returns its id; it fails the test when they do not within StartTimeout
// (for example when a majority was stopped).
func (e *Ensemble) Leader() int {
	e.t.Helper()
	id, err := e.waitQuorum(e.opts.StartTimeout)
	if err != nil {
		e.t.Fatalf("apachezk: no leader: %v\n%s", err, e.report())
	}
	return id
}

// Mode asks member id with srvr and returns "leader" or "follower"; an
// error when it does not answer or does not serve (during an election).
func (e *Ensemble) Mode(id int) (string, error) {
	out, err := FourLetter(e.Addr(id), "srvr", time.Second)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if mode, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(mode), nil
		}
	}
	return "", fmt.Errorf("member %d not serving: %q", id, strings.TrimSpace(out))
}

// MemberOf returns the id of the running member a client session is
// connected to, from each member's list of connections (4lw cons), or 0
// when no member lists it (the client is between servers).
func (e *Ensemble) MemberOf(sessionID int64) int {
	sid := fmt.Sprintf("sid=0x%x,", uint64(sessionID))
	for _, m := range e.members {
		if !e.Running(m.id) {
			continue
		}
		out, err := FourLetter(e.Addr(m.id), "cons", time.Second)
		if err == nil && strings.Contains(out, sid) {
			return m.id
		}
	}
	return 0
}

func (e *Ensemble) member(id int) *member {
	if id < 1 || id > len(e.members) {
		panic(fmt.Sprintf("apachezk: no ensemble member %d (ids are 1 to %d)", id, len(e.members)))
	}
	return e.members[id-1]
}

// launch starts m's process after checking that none of its ports is taken:
// a member on a busy port dies, or we would talk to a stranger.
func (e *Ensemble) launch(m *member) error {
	for _, p := range []int{m.clientPort, m.peerPort, m.electionPort} {
		if !portFree(p) {
			return fmt.Errorf("port %d was taken before the server started", p)
		}
	}
	srv, err := launch(e.t, e.cp, m.dir, m.dataDir, m.clientPort, m.cfgPath, ensembleJVM, quorumMain)
	if err != nil {
		return err
	}
	e.mu.Lock()
	m.srv = srv
	e.mu.Unlock()
	return nil
}

// waitQuorum polls until every running member answers ruok and reports a
// mode, exactly one of them "leader", and returns the leader's id.
func (e *Ensemble) waitQuorum(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		leader, err := e.quorum()
		if err == nil {
			return leader, nil
		}
		last = err
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("after %s: %w", timeout, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// quorum checks the running members once.
func (e *Ensemble) quorum() (int, error) {
	leaders := []int{}
	running := 0
	for _, m := range e.members {
		if !e.Running(m.id) {
			continue
		}
		running++
		if out, err := FourLetter(e.Addr(m.id), "ruok", time.Second); err != nil || out != "imok" {
			return 0, fmt.Errorf("member %d: ruok answered %q (%v)", m.id, out, err)
		}
		mode, err := e.Mode(m.id)
		if err != nil {
			return 0, err
		}
		switch mode {
		case "leader":
			leaders = append(leaders, m.id)
		case "follower":
		default:
			return 0, fmt.Errorf("member %d: mode %q", m.id, mode)
		}
	}
	if running == 0 {
		return 0, errors.New("no member is running")
	}
	if len(leaders) != 1 {
		return 0, fmt.Errorf("leaders %v among %d running members, want exactly one", leaders, running)
	}
	return leaders[0], nil
}

// report describes each member for failure messages.
func (e *Ensemble) report() string {
	var b strings.Builder
	for _, m := range e.members {
		e.mu.Lock()
		srv := m.srv
		e.mu.Unlock()
		state := "running"
		if !e.Running(m.id) {
			state = "exited"
		}
		srvr, err := FourLetter(e.Addr(m.id), "srvr", time.Second)
		if err != nil {
			srvr = err.Error()
		}
		fmt.Fprintf(&b, "member %d (%s, client %d, peer %d, election %d): srvr: %s\noutput:\n%s\n",
			m.id, state, m.clientPort, m.peerPort, m.electionPort, strings.TrimSpace(srvr), srv.log.String())
	}
	return b.String()
}

// freePorts returns n distinct loopback ports nobody listens on: all are
// held open together so that none is handed out twice.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find free port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

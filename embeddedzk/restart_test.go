package embeddedzk_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
)

// TestRestart kills the registry process with SIGKILL and restarts it on the
// same data dir: every acknowledged write must survive, zxids must keep
// growing, and a torn tail of the transaction log must not stop the start.
func TestRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the dubbo binary")
	}
	bin := buildDubbo(t)

	t.Run("kill9", func(t *testing.T) {
		reg := newRegistryProcess(t, bin)
		reg.start(t)
		c := connect(t, reg.target())
		want := writeNodes(t, c, "/restart", 300)
		reg.kill9(t)

		reg.start(t)
		c = connect(t, reg.target())
		checkNodes(t, c, want)
	})

	t.Run("torn_log_tail", func(t *testing.T) {
		reg := newRegistryProcess(t, bin)
		reg.start(t)
		c := connect(t, reg.target())
		want := writeNodes(t, c, "/torn", 100)
		reg.kill9(t)

		tearLog(t, reg.dataDir)
		// The server keeps writing after the torn tail, and the new writes
		// survive the next crash too.
		startsWithEverything(t, reg, want)
	})

	// The case: 16 bytes overwritten at a record in the middle of
	// the log after kill -9. Before, the server called it a torn tail, cut
	// the rest of the file and started without 301 acknowledged creates.
	t.Run("mid_log_corruption", func(t *testing.T) {
		reg := newRegistryProcess(t, bin)
		reg.start(t)
		c := connect(t, reg.target())
		want := writeNodes(t, c, "/mid", 300)
		reg.kill9(t)

		log := newestLog(t, reg.dataDir)
		off := midLogRecord(t, log)
		f, err := os.OpenFile(log, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("sixteen bytes!!!"), off); err != nil {
			t.Fatal(err)
		}
		f.Close()
		damaged, _ := os.ReadFile(log)

		out := reg.startFails(t)
		t.Logf("refused start:\n%s", out)
		for _, w := range []string{log, fmt.Sprintf("offset %d", off), "not a torn write", "registry.server.recover-truncate = true"} {
			if !strings.Contains(out, w) {
				t.Errorf("start-up error lacks %q:\n%s", w, out)
			}
		}
		if now, _ := os.ReadFile(log); !bytes.Equal(now, damaged) {
			t.Fatalf("the refused start changed the log (%d bytes, was %d)", len(now), len(damaged))
		}

		// The operator asks for recovery: the damaged part is kept aside
		// and the registry starts from the writes before it.
		reg.extra = []string{"--set", "registry.server.recover-truncate=true"}
		reg.start(t)
		side, err := os.ReadFile(fmt.Sprintf("%s.damaged-%d", log, off))
		if err != nil || !bytes.Equal(side, damaged[off:]) {
			t.Errorf("side file: %v, %d bytes; want the %d bytes from the damage on", err, len(side), len(damaged)-int(off))
		}
		c = connect(t, reg.target())
		kept := 0
		for p := range want.nodes {
			if ok, _, err := c.Exists(p); err == nil && ok {
				kept++
			}
		}
		if kept == 0 || kept == len(want.nodes) {
			t.Errorf("%d of %d nodes after recovery, want those before the damage", kept, len(want.nodes))
		}
		t.Logf("recovered %d of %d nodes; the rest is in the side file", kept, len(want.nodes))
		more := writeNodes(t, c, "/mid-after", 20)
		reg.kill9(t)
		reg.extra = nil
		reg.start(t)
		checkNodes(t, connect(t, reg.target()), more)
	})
}

// midLogRecord returns the offset of the first record at or after the
// middle of a log file, walking the framing (8-byte file header; records of
// crc32c, length with a write-start flag in its top bit, zxid, payload).
func midLogRecord(t *testing.T, p string) int64 {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	off := 8
	for off+16 <= len(b) {
		if off >= len(b)/2 {
			return int64(off)
		}
		off += 16 + int(binary.LittleEndian.Uint32(b[off+4:])&^(1<<31))
	}
	t.Fatalf("no record after the middle of %s (%d bytes)", p, len(b))
	return 0
}

// buildDubbo builds the dubbo binary from the repository root.
func buildDubbo(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "dubbo")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = ".." // the repository root, one up from embeddedzk/
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// registryProcess is `dubbo run --role=registry` on a fixed port and data
// dir, restartable.
type registryProcess struct {
	bin, dataDir, workDir, addr string
	extra                       []string // more --set flags
	cmd                         *exec.Cmd
	done                        chan struct{}
	out                         *lockedBuffer
}

func newRegistryProcess(t testing.TB, bin string) *registryProcess {
	port, err := apachezk.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return &registryProcess{
		bin:     bin,
		dataDir: filepath.Join(t.TempDir(), "registry"),
		workDir: t.TempDir(), // no dubbo.toml here: flags only
		addr:    fmt.Sprintf("127.0.0.1:%d", port),
	}
}

func (r *registryProcess) target() target { return target{name: "embedded", addr: r.addr} }

func (r *registryProcess) start(t testing.TB) {
	t.Helper()
	r.out = &lockedBuffer{}
	r.cmd = exec.Command(r.bin, "run", "--role=registry",
		"--set", "registry.server.listen="+r.addr,
		"--set", "registry.server.data-dir="+r.dataDir,
		"--set", "registry.server.tick-time=500ms")
	r.cmd.Args = append(r.cmd.Args, r.extra...)
	r.cmd.Dir = r.workDir
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatalf("start dubbo: %v", err)
	}
	done := make(chan struct{})
	r.done = done
	cmd := r.cmd
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // a no-op once it was reaped
		<-done
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, err := apachezk.FourLetter(r.addr, "ruok", time.Second)
		if err == nil && out == "imok" {
			return
		}
		select {
		case <-done:
			t.Fatalf("dubbo exited during start-up:\n%s", r.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no imok from %s within 20s (%q, %v):\n%s", r.addr, out, err, r.out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startFails starts the process, expects it to exit with an error before it
// serves, and returns its output.
func (r *registryProcess) startFails(t testing.TB) string {
	t.Helper()
	cmd := exec.Command(r.bin, "run", "--role=registry",
		"--set", "registry.server.listen="+r.addr,
		"--set", "registry.server.data-dir="+r.dataDir,
		"--set", "registry.server.tick-time=500ms")
	cmd.Args = append(cmd.Args, r.extra...)
	cmd.Dir = r.workDir
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start dubbo: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case err := <-done:
			if err == nil {
				t.Fatalf("dubbo exited 0, want a start-up error:\n%s", out.String())
			}
			return out.String()
		case <-deadline:
		case <-time.After(50 * time.Millisecond):
			if ans, _ := apachezk.FourLetter(r.addr, "ruok", time.Second); ans != "imok" {
				continue
			}
		}
		cmd.Process.Kill()
		<-done
		t.Fatalf("dubbo is serving, want it to refuse to start:\n%s", out.String())
	}
}

// kill9 sends SIGKILL and waits until the process is gone.
func (r *registryProcess) kill9(t testing.TB) {
	t.Helper()
	if err := r.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill -9 dubbo: %v", err)
	}
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("dubbo still running 10s after SIGKILL")
	}
}

type nodeWant struct {
	data    string
	version int32
}

// nodeSet is what a client was told was written, and the largest zxid seen.
type nodeSet struct {
	nodes   map[string]nodeWant
	maxZxid int64
}

// writeNodes creates n persistent nodes under root and sets every third one
// twice, remembering each acknowledged value.
func writeNodes(t *testing.T, c *zk.Conn, root string, n int) nodeSet {
	t.Helper()
	set := nodeSet{nodes: map[string]nodeWant{}}
	mustCreate(t, c, root, []byte("root"), zk.FlagPersistent)
	set.nodes[root] = nodeWant{"root", 0}
	for i := range n {
		p := fmt.Sprintf("%s/n%03d", root, i)
		data := fmt.Sprintf("data-%d-%s", i, strings.Repeat("x", i%50))
		mustCreate(t, c, p, []byte(data), zk.FlagPersistent)
		st := mustStat(t, c, p)
		set.maxZxid = max(set.maxZxid, st.Czxid)
		set.nodes[p] = nodeWant{data, 0}
		if i%3 != 0 {
			continue
		}
		for v := int32(1); v <= 2; v++ {
			data = fmt.Sprintf("v%d-%d", v, i)
			st, err := c.Set(p, []byte(data), v-1)
			if err != nil {
				t.Fatalf("set %s: %v", p, err)
			}
			set.maxZxid = max(set.maxZxid, st.Mzxid)
			set.nodes[p] = nodeWant{data, v}
		}
	}
	return set
}

// checkNodes verifies every node and that a new write gets a larger zxid.
func checkNodes(t *testing.T, c *zk.Conn, set nodeSet) {
	t.Helper()
	bad := 0
	for p, w := range set.nodes {
		data, st, err := c.Get(p)
		if err != nil || string(data) != w.data || st.Version != w.version {
			bad++
			if bad <= 10 {
				t.Errorf("%s = %q version %d, %v; want %q version %d", p, data, versionOf(st), err, w.data, w.version)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d nodes wrong after restart", bad, len(set.nodes))
	}
	p, err := c.Create("/zxid-probe-", nil, zk.FlagSequence, zk.WorldACL(zk.PermAll))
	if err != nil {
		t.Fatalf("create after restart: %v", err)
	}
	if st := mustStat(t, c, p); st.Czxid <= set.maxZxid {
		t.Errorf("zxid went backwards: new node czxid %#x, before the crash %#x", st.Czxid, set.maxZxid)
	}
}

func versionOf(st *zk.Stat) int32 {
	if st == nil {
		return -1
	}
	return st.Version
}

// startsWithEverything starts reg and checks that it has every write of
// want, that it takes new writes, and that those survive the next crash.
func startsWithEverything(t *testing.T, reg *registryProcess, want nodeSet) {
	t.Helper()
	reg.start(t)
	c := connect(t, reg.target())
	checkNodes(t, c, want)
	more := writeNodes(t, c, "/after-restart", 20)
	reg.kill9(t)
	reg.start(t)
	c = connect(t, reg.target())
	checkNodes(t, c, want)
	checkNodes(t, c, more)
}

// tearLog appends half a record header to the newest log in dir, what a
// crash in the middle of a write leaves, and returns the log's path.
func tearLog(t *testing.T, dir string) string {
	t.Helper()
	log := newestLog(t, dir)
	f, err := os.OpenFile(log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("appending half a record to %s", log)
	if _, err := f.Write([]byte{0x00, 0x00, 0x01, 0xde, 0xad, 0xbe, 0xef}); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return log
}

// newestLog returns the most recently written log.* file in the data dir.
func newestLog(t *testing.T, dir string) string {
	t.Helper()
	var newest string
	var newestTime time.Time
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasPrefix(d.Name(), "log.") {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if newest == "" || info.ModTime().After(newestTime) || (info.ModTime().Equal(newestTime) && p > newest) {
			newest, newestTime = p, info.ModTime()
		}
		return nil
	})
	if err != nil || newest == "" {
		t.Fatalf("no log.* file in %s: %v", dir, err)
	}
	return newest
}

// lockedBuffer collects a process's output while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

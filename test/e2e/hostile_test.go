package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Hostile consumers against a provider process (`dubbo run
// --role=provider` with the greeter plugin, no registry) while `dubbo
// bench` calls it with 8 callers: the provider's memory (VmRSS, VmHWM
// from /proc) stays bounded, every attacking connection is closed, and
// the bench loses no call.

// providerOnly starts a provider of the greeter plugin on a free port with
// the extra [protocol] lines, and waits until it answers.
func providerOnly(t *testing.T, protocol ...string) (*node, string, string) {
	t.Helper()
	return soloProvider(t, "dubbo", []string{"greeter"}, protocol...)
}

// soloProvider starts a provider of the named plugins, without registry,
// serving scheme (dubbo or tri) on a free port with the extra [protocol]
// lines, and waits until the greeter among them answers sayHello.
func soloProvider(t *testing.T, scheme string, plugins []string, protocol ...string) (*node, string, string) {
	t.Helper()
	dir := t.TempDir()
	p := freePorts(t, 1)
	paths := make([]string, len(plugins))
	for i, name := range plugins {
		paths[i] = strconv.Quote(binary(name))
	}
	cfg := fmt.Sprintf("data-dir = %q\n\n[application]\nname = \"e2e-hostile\"\n\n[registry]\naddress = \"\"\n\n[qos]\nlisten = \"\"\n\n"+
		"[protocol]\nname = %q\nhost = \"127.0.0.1\"\nport = %d\n%s\n\n[provider]\nplugins = [%s]\n",
		filepath.Join(dir, "data"), scheme, p.provider, strings.Join(protocol, "\n"), strings.Join(paths, ", "))
	if err := os.WriteFile(filepath.Join(dir, "dubbo.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, "provider", dir, "run", "--role=provider", "-c", "dubbo.toml")
	url := scheme + "://" + p.providerAddr(0)
	if _, ok := waitFor(20*time.Second, func() bool {
		r, err := runDubbo(dir, "call", "--url", url, "--version", "1.0.0", "org.example.Greeter", "sayHello", `"x"`)
		return err == nil && r.code == 0 || n.exited()
	}); !ok || n.exited() {
		t.Fatalf("the provider did not answer sayHello within 20s")
	}
	return n, dir, p.providerAddr(0)
}

// memory is a process's resident set now and at its peak, in KiB.
type memory struct{ rss, hwm int64 }

func memoryOf(t *testing.T, pid int) memory {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	var m memory
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		switch k {
		case "VmRSS":
			m.rss = kb
		case "VmHWM":
			m.hwm = kb
		}
	}
	return m
}

// requestHeader is a two-way hessian2 request header announcing bodyLen
// bytes.
func requestHeader(id int64, bodyLen int) []byte {
	b := []byte{0xda, 0xbb, 0xc2, 0}
	for shift := 56; shift >= 0; shift -= 8 {
		b = append(b, byte(uint64(id)>>shift))
	}
	return append(b, byte(bodyLen>>24), byte(bodyLen>>16), byte(bodyLen>>8), byte(bodyLen))
}

// heartbeat is a two-way heartbeat request.
var heartbeat = append([]byte{0xda, 0xbb, 0xe2, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1}, 'N')

// dialAll opens n connections to addr.
func dialAll(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			t.Fatalf("connection %d of %d: %v", i, n, err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
	}
	return conns
}

// closedByServer waits until the server has closed every connection, at
// most until start+within; it returns how many it closed and when the last
// was, from start.
func closedByServer(conns []net.Conn, start time.Time, within time.Duration) (int, time.Duration) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	closed, last := 0, time.Duration(0)
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(start.Add(within))
			_, err := io.Copy(io.Discard, c)
			if err == nil || errors.Is(err, syscall.ECONNRESET) {
				mu.Lock()
				closed++
				last = max(last, time.Since(start))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return closed, last
}

// Item: 200 connections announcing an 8 MiB body and sending one byte of
// it, and 50 dripping a request at 1 byte/s. The provider's memory grows by
// tens of MB at most (bodies grow as bytes arrive, large bodies share
// protocol.body-memory), every such connection is closed once
// protocol.frame-timeout has passed, and the bench loses no call.
func TestHostileHeadersAndDrips(t *testing.T) {
	const frameTimeout = 3 * time.Second
	prov, dir, addr := providerOnly(t, fmt.Sprintf("frame-timeout = %q", frameTimeout))
	base := memoryOf(t, prov.pid())
	load := startBench(t, dir, "--url", "dubbo://"+addr, "-c", "8", "-d", "10s")
	time.Sleep(time.Second)

	attacked := time.Now()
	headers := dialAll(t, addr, 200)
	for i, c := range headers {
		c.Write(append(requestHeader(int64(i), 8<<20), 'N'))
	}
	drips := dialAll(t, addr, 50)
	stop := make(chan struct{})
	defer close(stop)
	for _, c := range drips {
		go func() { // at most 16 s: the frame is 17 bytes
			for i := range heartbeat {
				if _, err := c.Write(heartbeat[i : i+1]); err != nil {
					return
				}
				select {
				case <-stop:
					return
				case <-time.After(time.Second):
				}
			}
		}()
	}
	during := memoryOf(t, prov.pid())
	headersClosed, headersTook := closedByServer(headers, attacked, frameTimeout+5*time.Second)
	dripsClosed, dripsTook := closedByServer(drips, attacked, frameTimeout+5*time.Second)
	s := load.wait(t)
	after := memoryOf(t, prov.pid())

	t.Logf("provider memory: %d MB before, %d MB with the attack connections open, %d MB after; peak %d MB",
		base.rss>>10, during.rss>>10, after.rss>>10, after.hwm>>10)
	t.Logf("closed by the provider: %d of 200 announcing 8 MiB (the last %v after the attack began), %d of 50 dripping (the last after %v)",
		headersClosed, headersTook.Round(time.Millisecond), dripsClosed, dripsTook.Round(time.Millisecond))
	t.Logf("bench meanwhile: %d calls, %d errors %v, p99 %d µs, max %d µs", s.Calls, s.Errors, s.ErrorsByKind, s.P99us, s.MaxUs)
	if grew := after.hwm - base.rss; grew > 100<<10 {
		t.Errorf("the provider's peak memory grew %d MB over its %d MB; want at most 100 MB", grew>>10, base.rss>>10)
	}
	if headersClosed != len(headers) || dripsClosed != len(drips) {
		t.Errorf("the provider closed %d of %d incomplete frames and %d of %d drips within %v",
			headersClosed, len(headers), dripsClosed, len(drips), frameTimeout+5*time.Second)
	}
	if s.Calls == 0 || s.Errors != 0 {
		t.Errorf("bench during the attack: %d calls, %d errors %v; want calls and no error", s.Calls, s.Errors, s.ErrorsByKind)
	}
}

// Item: 50 connections send heartbeats as fast as they can and never read
// the answers. The provider stops reading each once its unsent answers
// pass a small bound (its kernel socket buffers aside), so its memory
// stays within tens of MB, and the bench's calls are served meanwhile.
func TestUnreadHeartbeatFlood(t *testing.T) {
	prov, dir, addr := providerOnly(t)
	base := memoryOf(t, prov.pid())
	load := startBench(t, dir, "--url", "dubbo://"+addr, "-c", "8", "-d", "11s")
	time.Sleep(time.Second)

	flood := dialAll(t, addr, 50)
	burst := bytes.Repeat(heartbeat, 4096) // 68 KiB
	var sent sync.WaitGroup
	var total sync.Mutex
	sentBytes := 0
	for _, c := range flood {
		c.(*net.TCPConn).SetReadBuffer(4 << 10)
		sent.Add(1)
		go func() {
			defer sent.Done()
			// Up to 32 MiB each, for 8 s at most: the writes block once
			// the provider stops reading (and its socket buffer is full).
			c.SetWriteDeadline(time.Now().Add(8 * time.Second))
			for range 32 << 20 / len(burst) {
				n, err := c.Write(burst)
				total.Lock()
				sentBytes += n
				total.Unlock()
				if err != nil {
					return
				}
			}
		}()
	}
	sent.Wait()
	during := memoryOf(t, prov.pid())
	for _, c := range flood {
		c.Close()
	}
	s := load.wait(t)
	after := memoryOf(t, prov.pid())

	t.Logf("provider memory: %d MB before, %d MB with the flood blocked, %d MB after; peak %d MB",
		base.rss>>10, during.rss>>10, after.rss>>10, after.hwm>>10)
	t.Logf("the 50 flooding connections got %d MB of heartbeats into the provider's socket before it stopped reading them",
		sentBytes>>20)
	t.Logf("bench meanwhile: %d calls, %d errors %v, p99 %d µs, max %d µs", s.Calls, s.Errors, s.ErrorsByKind, s.P99us, s.MaxUs)
	// 50 connections × 256 KiB of unsent answers is 12.5 MiB.
	if grew := after.hwm - base.rss; grew > 64<<10 {
		t.Errorf("the provider's peak memory grew %d MB over its %d MB; want at most 64 MB", grew>>10, base.rss>>10)
	}
	// The flood costs CPU on the 2 cores the test, the bench and the
	// provider share; the provider's readers yield to each other, so the
	// bench's calls are answered meanwhile.
	if s.Calls == 0 || s.Errors*100 > s.Calls {
		t.Errorf("bench during the flood: %d calls, %d errors %v; want calls and under 1%% errors", s.Calls, s.Errors, s.ErrorsByKind)
	}
}

// protocol.accepts: over it, a connection is closed at once and the log
// says why; one that leaves makes room again.
func TestAcceptsRefusesConnections(t *testing.T) {
	prov, dir, addr := providerOnly(t, "accepts = 3")
	// providerOnly's calls have come and gone; take every place.
	var held []net.Conn
	for len(held) < 3 {
		held = append(held, dialAll(t, addr, 1)...)
		// The provider counts a connection once it has accepted it.
		held[len(held)-1].Write(heartbeat)
		held[len(held)-1].SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.ReadFull(held[len(held)-1], make([]byte, 17)); err != nil {
			t.Fatalf("connection %d: no heartbeat answer: %v", len(held), err)
		}
	}
	r := dubbo(t, dir, "call", "--url", "dubbo://"+addr, "--version", "1.0.0", "--timeout", "1s", "org.example.Greeter", "sayHello", `"over"`)
	if r.code == 0 {
		t.Fatalf("dubbo call over accepts=3 succeeded: %s", r.stdout)
	}
	t.Logf("dubbo call over accepts: exit %d: %s", r.code, strings.TrimSpace(r.stderr))
	if _, ok := waitFor(2*time.Second, func() bool {
		return strings.Contains(prov.stderr.String(), "reached protocol.accepts")
	}); !ok {
		t.Errorf("the provider's log does not say it refused a connection over accepts:\n%s", lastLines(prov.stderr.String(), 20))
	}
	held[0].Close()
	if _, ok := waitFor(5*time.Second, func() bool {
		r := dubbo(t, dir, "call", "--url", "dubbo://"+addr, "--version", "1.0.0", "org.example.Greeter", "sayHello", `"room"`)
		return r.code == 0
	}); !ok {
		t.Errorf("dubbo call still refused after a connection left")
	}
}

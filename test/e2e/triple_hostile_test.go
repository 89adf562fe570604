package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"google.golang.org/protobuf/proto"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/internal/testkit/h2raw"
	"github.com/dubbo-lab/dubbo/node/triple"
	"github.com/dubbo-lab/dubbo/node/triple/wrapper"
)

// Hostile clients against a provider serving Triple: `dubbo run
// --role=provider` with protocol.name = "tri", the examples/greet plugin
// (greet.GreetService) and the greeter (org.example.Greeter, in wrapper
// mode), no registry, protocol.payload 64 KiB and frame-timeout 3s. While
// a probe runs, `dubbo bench` calls Greet over tri:// with 8 callers and
// must lose no call. The probe checks what it is answered (a gRPC status,
// an RST_STREAM or GOAWAY code, an HTTP status over HTTP/1.1) and that its
// connections end; afterwards the provider holds none of them, its
// plugins were not restarted, and its peak memory (VmHWM) grew over that
// of a no-attack baseline (the same bench just before) by no more than
// the probe's bound.

// The provider's limits the probes run into: the payload and frame
// timeout they set, and node/triple's defaults for the rest.
const (
	triPayload      = 64 << 10
	triFrameTimeout = 3 * time.Second
	triStreams      = triple.DefaultMaxConcurrentStreams
	triHeaderList   = triple.DefaultMaxHeaderListSize
)

// The methods the probes call.
const (
	greetPath    = "/greet.GreetService/Greet"
	sayHelloPath = "/org.example.Greeter/sayHello"
)

// triProbe is one kind of hostile client.
type triProbe struct {
	name   string
	config []string // more [protocol] lines
	// growth bounds, in MiB, how far the provider's peak memory during
	// the attack may exceed its peak in the baseline.
	growth int64
	// attack runs the hostile clients, checks their answers, and returns
	// once its connections ended.
	attack func(t *testing.T, tg triTarget)
}

// triTarget is the provider a probe attacks.
type triTarget struct {
	addr      string
	pid, port int
}

// holds says whether the provider still has the connection whose client
// end is local (in any state: one it never closed shows too).
func (tg triTarget) holds(local net.Addr) bool {
	for _, s := range socketsOf(tg.pid) {
		if s.remote.String() == local.String() && int(s.local.Port()) == tg.port {
			return true
		}
	}
	return false
}

func TestTripleHostile(t *testing.T) {
	for _, p := range []triProbe{
		{name: "declared length past payload", growth: 32, attack: declaredPastPayload},
		// 8 connections × 50 streams hold a 32 KiB bomb each at once
		// (13 MB), each inflated up to 64 KiB.
		{name: "gzip bomb", growth: 48, attack: gzipBomb},
		{name: "HEADERS flood", growth: 32, attack: headersFlood},
		{name: "rapid reset", growth: 48, attack: rapidReset},
		{name: "oversized header blocks", growth: 32, attack: oversizedHeaders},
		// 4 connections × 100 streams may buffer 4 × 100 × 64 KiB (each
		// stream's window) = 26 MB, and the garbage collector's headroom
		// doubles it.
		{name: "stalled requests", growth: 96, attack: stalledRequests},
		{name: "answers never read", growth: 64, attack: answersNeverRead},
		{name: "unknown service or method", growth: 32, attack: unknownMethods},
		{name: "malformed protobuf", growth: 32, attack: malformedProto},
		{name: "malformed JSON", growth: 32, attack: malformedJSON},
		{name: "malformed wrapper", growth: 32, attack: malformedWrapper},
		// 500 idle HTTP/2 connections of some 65 KB each (the reader's
		// 32 KiB buffer, two goroutines, HPACK tables): 33 MB.
		{name: "connections past accepts", config: []string{"accepts = 500"}, growth: 96, attack: connectionsPastAccepts},
	} {
		t.Run(p.name, func(t *testing.T) { underAttack(t, p) })
	}
}

// Idle streams leave the business pool alone: a Triple stream waits on its
// client (for a message that does not come, or a window kept shut) for as
// long as the client keeps it open, and when streams held pool threads, a
// client with 100 idle streams on each of two connections held all 200
// and every other call of the provider (over dubbo:// too) was refused
// with pool_exhausted until it left. Now another client's calls are served.
func TestTripleIdleStreamsLeaveThePool(t *testing.T) {
	_, dir, addr := triProvider(t, fmt.Sprintf("frame-timeout = %q", triFrameTimeout))
	opened := make(chan error, 2)
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		onConns(t, addr, 2, func(c *h2raw.Client) error {
			var err error
			for i := range uint32(triStreams) {
				if err = c.Send(2*i+1, false, "/greet.GreetService/GreetStream"); err != nil {
					break
				}
			}
			opened <- err
			<-release
			return nil
		})
	})
	defer wg.Wait()
	defer close(release)
	for range 2 {
		select {
		case err := <-opened:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the idle streams were not opened within 10s")
		}
	}
	// Past every bound the provider sets on a request's arrival.
	time.Sleep(2 * triFrameTimeout)
	s := benchResult(t, dubbo(t, dir, "bench", "--url", "tri://"+addr, "-n", "100", "-c", "2", "greet.GreetService", "Greet", `{"name":"x"}`))
	if s.Errors != 0 {
		t.Errorf("another client's calls while 200 idle streams are open: %d of %d failed %v; want none", s.Errors, s.Calls, s.ErrorsByKind)
	}
}

// underAttack runs p against a provider of its own while the bench calls
// it, and checks the bench, the memory and the connections.
func underAttack(t *testing.T, p triProbe) {
	config := append([]string{fmt.Sprintf("payload = %d", triPayload), fmt.Sprintf("frame-timeout = %q", triFrameTimeout)}, p.config...)
	prov, dir, addr := triProvider(t, config...)
	pid, port := prov.pid(), portOf(t, addr)
	plugins := fmt.Sprint(prov.pluginPIDs("greet"), prov.pluginPIDs("greeter"))
	load := startBenchOf(t, dir, "--url", "tri://"+addr, "-c", "8", "-d", "2m", "greet.GreetService", "Greet", `{"name":"x"}`)
	time.Sleep(time.Second) // the bench connects and warms up
	resetPeak(t, pid)
	time.Sleep(time.Second)
	base := memoryOf(t, pid)
	benchConns := connectionsOn(pid, port)

	resetPeak(t, pid)
	start := time.Now()
	p.attack(t, triTarget{addr: addr, pid: pid, port: port})
	took := time.Since(start)
	attacked := memoryOf(t, pid)
	left, ok := waitFor(5*time.Second, func() bool { return connectionsOn(pid, port) <= benchConns })
	if !ok {
		t.Errorf("the provider still holds %d connections 5s after the attack, the bench's %d among them", connectionsOn(pid, port), benchConns)
	}
	time.Sleep(500 * time.Millisecond) // calls after the attack
	s := load.stop(t)
	after := memoryOf(t, pid)

	t.Logf("provider memory: baseline %d MB (peak %d MB); peak under attack %d MB, %+d MB over the baseline's (bound %d MB); %d MB after",
		base.rss>>10, base.hwm>>10, attacked.hwm>>10, (attacked.hwm-base.hwm)>>10, p.growth, after.rss>>10)
	t.Logf("the attack took %v; its connections were gone from the provider %v after it", took.Round(time.Millisecond), left.Round(time.Millisecond))
	t.Logf("bench: %d calls (%.0f/s), %d errors %v, p99 %d µs, max %d µs", s.Calls, s.QPS, s.Errors, s.ErrorsByKind, s.P99us, s.MaxUs)
	if grew := attacked.hwm - base.hwm; grew > p.growth<<10 {
		t.Errorf("the provider's peak memory grew %d MB over the baseline's %d MB; want at most %d MB", grew>>10, base.hwm>>10, p.growth)
	}
	if s.Calls == 0 || s.Errors != 0 {
		t.Errorf("bench during the attack: %d calls, %d errors %v; want calls and no error", s.Calls, s.Errors, s.ErrorsByKind)
	}
	if prov.exited() {
		t.Fatalf("the provider exited")
	}
	if now := fmt.Sprint(prov.pluginPIDs("greet"), prov.pluginPIDs("greeter")); now != plugins {
		t.Errorf("the plugins' processes were %s before the attack and %s after: one was restarted", plugins, now)
	}
}

// triProvider starts a provider serving the greet and greeter plugins
// over tri with the extra [protocol] lines, and waits until both answer.
func triProvider(t *testing.T, protocol ...string) (*node, string, string) {
	t.Helper()
	prov, dir, addr := soloProvider(t, "tri", []string{"greet", "greeter"}, protocol...)
	// A bench reads Greet's descriptor once, when it starts: greet must
	// serve it by then.
	if _, ok := waitFor(10*time.Second, func() bool {
		r, err := runDubbo(dir, "call", "--url", "tri://"+addr, "greet.GreetService", "Greet", `{"name":"x"}`)
		return err == nil && r.code == 0
	}); !ok {
		t.Fatal("greet.GreetService/Greet did not answer within 10s")
	}
	return prov, dir, addr
}

func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, _ := net.SplitHostPort(addr)
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// resetPeak resets a process's VmHWM to its VmRSS (proc(5), clear_refs).
func resetPeak(t *testing.T, pid int) {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatal(err)
	}
}

// onConns runs attack on n HTTP/2 connections at once (each has sent its
// preface and acknowledged the server's SETTINGS); an error it returns
// fails the test. The connections are closed when attack returns.
func onConns(t *testing.T, addr string, n int, attack func(c *h2raw.Client) error, settings ...http2.Setting) {
	t.Helper()
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := range n {
		c, err := h2raw.Connect(addr, true, settings...)
		if err != nil {
			t.Errorf("connection %d: %v", i, err)
			break
		}
		wg.Go(func() {
			defer c.Conn.Close()
			if err := attack(c); err != nil && failed.Add(1) <= 3 {
				t.Errorf("connection %d of %d: %v", i+1, n, err)
			}
		})
	}
	wg.Wait()
	if f := failed.Load(); f > 3 {
		t.Errorf("... %d connections of %d failed", f, n)
	}
}

// calls opens count streams on c, batch at a time, each with send, and
// checks that each ends with grpc-status want.
func calls(c *h2raw.Client, count, batch int, want triple.Code, send func(id uint32) error) error {
	id := uint32(1)
	for sent := 0; sent < count; sent += batch {
		first := id
		for range batch {
			if err := send(id); err != nil {
				return fmt.Errorf("stream %d: %w", id, err)
			}
			id += 2
		}
		last := id - 2
		v := c.Read(triFrameTimeout+10*time.Second, func(v *h2raw.Conversation) bool {
			for s := first; s <= last; s += 2 {
				if !h2raw.Ended(s)(v) {
					return false
				}
			}
			return true
		})
		for s := first; s <= last; s += 2 {
			if r := v.Streams[s]; r == nil || r.Status() != int(want) {
				return fmt.Errorf("stream %d: want grpc-status %d (%v), got %+v (read: %v, GOAWAY %v)", s, want, want, r, v.Err, v.GoAway)
			}
		}
	}
	return nil
}

// greetRequest is a greet.GreetRequest, encoded.
func greetRequest(name string) []byte {
	b, _ := proto.Marshal(&greetpb.GreetRequest{Name: name}) // a string field
	return b
}

// prefix is a gRPC message's prefix: the compressed flag, then the
// length, big-endian.
func prefix(compressed byte, length uint32) []byte {
	return []byte{compressed, byte(length >> 24), byte(length >> 16), byte(length >> 8), byte(length)}
}

// requestWith are a gRPC request's header fields for path with another
// content-type.
func requestWith(path, contentType string, extra ...string) []string {
	f := h2raw.RequestFields(path, extra...)
	for i := 0; i+1 < len(f); i += 2 {
		if f[i] == "content-type" {
			f[i+1] = contentType
		}
	}
	return f
}

// posts makes n HTTP/1.1 POSTs of path, each to be answered with status
// and, in its body, connect's error code.
func posts(t *testing.T, addr string, n int, path, contentType string, body func(i int) io.Reader, status int, code string, header ...string) {
	t.Helper()
	client := &http.Client{Timeout: triFrameTimeout + 5*time.Second}
	defer client.CloseIdleConnections()
	bad := 0
	for i := range n {
		got, text, err := postBody(client, "http://"+addr+path, contentType, body(i), header...)
		if err != nil || got != status || !strings.Contains(text, `"code":"`+code+`"`) {
			if bad++; bad <= 3 {
				t.Errorf("HTTP/1.1 POST %s (%s), request %d: %d %s %v; want %d with code %s", path, contentType, i, got, text, err, status, code)
			}
		}
	}
}

// postBody sends an HTTP/1.1 POST and returns the status and body.
func postBody(client *http.Client, url, contentType string, body io.Reader, header ...string) (int, string, error) {
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Content-Type", contentType)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// rawHTTP1 writes head (an HTTP/1.1 request, or the start of one) on a
// new connection and reads what the server answers until it closes the
// connection, at most until within has passed; it returns the status
// ("" without an answer), how long the connection lasted, and whether
// the server closed it.
func rawHTTP1(addr, head string, within time.Duration) (status string, lasted time.Duration, closed bool, err error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", 0, false, err
	}
	defer nc.Close()
	start := time.Now()
	if _, err := io.WriteString(nc, head); err != nil {
		return "", 0, false, err
	}
	_ = nc.SetReadDeadline(start.Add(within))
	br := bufio.NewReader(nc)
	if resp, rerr := http.ReadResponse(br, nil); rerr == nil {
		status = strconv.Itoa(resp.StatusCode)
	}
	_, err = io.Copy(io.Discard, br)
	return status, time.Since(start), !h2raw.IsTimeout(err), nil
}

// Item: a message declared longer than protocol.payload is refused
// (ResourceExhausted) from its 5-byte prefix, before its bytes are read;
// over HTTP/1.1 a Content-Length past it gets 429 before the body is read,
// and a chunked body once it passed the limit.
func declaredPastPayload(t *testing.T, tg triTarget) {
	onConns(t, tg.addr, 8, func(c *h2raw.Client) error {
		return calls(c, 400, 50, triple.ResourceExhausted, func(id uint32) error {
			if err := c.Send(id, false, greetPath); err != nil {
				return err
			}
			declared := uint32(triPayload + 1)
			if id%4 == 1 {
				declared = 1 << 30
			}
			return c.Framer.WriteData(id, false, append(prefix(0, declared), make([]byte, 1024)...))
		})
	})
	for range 4 {
		status, lasted, closed, err := rawHTTP1(tg.addr, "POST "+greetPath+" HTTP/1.1\r\nHost: t\r\nContent-Type: application/proto\r\nContent-Length: 1073741824\r\n\r\n"+
			strings.Repeat("x", 1024), 5*time.Second)
		if err != nil || status != "429" || !closed {
			t.Errorf("HTTP/1.1 with Content-Length 1 GiB: status %q, closed %v after %v (%v); want 429 and the connection closed", status, closed, lasted, err)
		}
	}
	posts(t, tg.addr, 4, greetPath, "application/proto", func(int) io.Reader {
		return io.MultiReader(bytes.NewReader(make([]byte, triPayload)), strings.NewReader("x")) // no length: chunked
	}, http.StatusTooManyRequests, "resource_exhausted")
}

// Item: a gzip bomb, 32 MiB of zeros in some 32 KiB, is inflated no
// further than protocol.payload and refused with ResourceExhausted (429
// over HTTP/1.1).
func gzipBomb(t *testing.T, tg triTarget) {
	var b bytes.Buffer
	z, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range 32 {
		z.Write(zeros)
	}
	z.Close()
	bomb := b.Bytes()
	if len(bomb) >= triPayload {
		t.Fatalf("the bomb is %d bytes compressed, not under the payload", len(bomb))
	}
	onConns(t, tg.addr, 8, func(c *h2raw.Client) error {
		return calls(c, 100, 50, triple.ResourceExhausted, func(id uint32) error {
			if err := c.Send(id, false, greetPath, "grpc-encoding", "gzip"); err != nil {
				return err
			}
			return c.Data(id, append(prefix(1, uint32(len(bomb))), bomb...), true)
		})
	})
	posts(t, tg.addr, 20, greetPath, "application/proto", func(int) io.Reader { return bytes.NewReader(bomb) },
		http.StatusTooManyRequests, "resource_exhausted", "Content-Encoding", "gzip")
}

// Item: a client that opens 100 streams (the most it may have open; each
// waits for its message) and goes on opening more gets those refused with
// REFUSED_STREAM, then GOAWAY ENHANCE_YOUR_CALM, and the connection ends.
func headersFlood(t *testing.T, tg triTarget) {
	var once sync.Once
	onConns(t, tg.addr, 4, func(c *h2raw.Client) error {
		id := uint32(1)
		for range triStreams {
			if err := c.Send(id, false, greetPath); err != nil {
				return err
			}
			id += 2
		}
		first := id
		go func() { // ends when the server hangs up, or after 4×100 streams
			for i := range 4 * triStreams {
				if c.Send(first+2*uint32(i), false, greetPath) != nil {
					return
				}
			}
		}()
		v := c.Read(triFrameTimeout+10*time.Second, func(v *h2raw.Conversation) bool { return v.Err != nil })
		refused := 0
		for sid, r := range v.Streams {
			if sid >= first && r.RST == http2.ErrCodeRefusedStream {
				refused++
			}
		}
		switch {
		case v.GoAway == nil || v.GoAway.ErrCode != http2.ErrCodeEnhanceYourCalm:
			return fmt.Errorf("want GOAWAY ENHANCE_YOUR_CALM, got %v (read: %v)", v.GoAway, v.Err)
		case h2raw.IsTimeout(v.Err):
			return errors.New("the connection is still open after its GOAWAY")
		case refused < triStreams:
			return fmt.Errorf("%d streams refused, want at least %d", refused, triStreams)
		}
		once.Do(func() { t.Logf("one connection: %d streams refused, then GOAWAY %q", refused, v.GoAway.DebugData()) })
		return nil
	})
}

// Item: HTTP/2 rapid reset. Clients that open streams and reset them at
// once (three at a time), or make whole calls and reset them before the
// answer (the calls reach the plugin), lose their connection with GOAWAY
// ENHANCE_YOUR_CALM; each attacker comes back four times.
func rapidReset(t *testing.T, tg triTarget) {
	req := h2raw.Frame(greetRequest("reset"))
	var wg sync.WaitGroup
	var mu sync.Mutex
	opened := map[bool][]int{} // by whole: streams opened before each GOAWAY
	// Whole calls hold business-pool threads until the plugin answers:
	// one attacker of them (at most 100 handlers running for streams it
	// reset) leaves the bench the rest of the 200.
	for whole, attackers := range map[bool]int{false: 3, true: 1} {
		for range attackers {
			wg.Go(func() {
				for range 4 {
					n, err := resetUntilGoAway(tg.addr, whole, req)
					mu.Lock()
					opened[whole] = append(opened[whole], n)
					mu.Unlock()
					if err != nil {
						t.Errorf("rapid reset (whole calls %v): %v", whole, err)
					}
				}
			})
		}
	}
	wg.Wait()
	for _, whole := range []bool{false, true} {
		t.Logf("whole calls %v: GOAWAY after %d to %d streams", whole, slices.Min(opened[whole]), slices.Max(opened[whole]))
	}
}

// resetUntilGoAway opens streams and resets them on one connection until
// the server sends GOAWAY; whole sends each request's message first. It
// returns how many streams the server took before its GOAWAY.
func resetUntilGoAway(addr string, whole bool, req []byte) (int, error) {
	c, err := h2raw.Connect(addr, true)
	if err != nil {
		return 0, err
	}
	defer c.Conn.Close()
	wrote := make(chan int, 1)
	go func() { // ends when the server hangs up, or after 20000 streams
		n := 0
		for id := uint32(1); n < 20000; id += 2 {
			err := c.Send(id, false, greetPath)
			if err == nil && whole {
				err = c.Data(id, req, true)
			}
			if err == nil {
				err = c.Framer.WriteRSTStream(id, http2.ErrCodeCancel)
			}
			if err != nil {
				break
			}
			n++
		}
		wrote <- n
	}()
	v := c.Read(20*time.Second, func(v *h2raw.Conversation) bool { return v.Err != nil })
	c.Conn.Close()
	n := <-wrote
	switch {
	case v.GoAway == nil || v.GoAway.ErrCode != http2.ErrCodeEnhanceYourCalm:
		return n, fmt.Errorf("%d streams reset; want GOAWAY ENHANCE_YOUR_CALM, got %v (read: %v)", n, v.GoAway, v.Err)
	case h2raw.IsTimeout(v.Err):
		return n, fmt.Errorf("the connection is still open after its GOAWAY (%d streams reset)", n)
	}
	return int(v.GoAway.LastStreamID+1) / 2, nil
}

// Item: header blocks. One just past the 64 KiB limit is answered with
// HTTP 431 (ResourceExhausted) and the connection serves on; one that
// runs far past it, or into endless CONTINUATION frames, ends the
// connection with GOAWAY ENHANCE_YOUR_CALM; over HTTP/1.1 an oversized
// header gets 431.
func oversizedHeaders(t *testing.T, tg triTarget) {
	onConns(t, tg.addr, 4, func(c *h2raw.Client) error {
		if err := overLimitBlock(c, 1); err != nil {
			return err
		}
		v := c.Read(5*time.Second, h2raw.Ended(1))
		r := v.Stream(1)
		if got := h2raw.Field(r.Headers, ":status"); got != "431" || r.Status() != int(triple.ResourceExhausted) {
			return fmt.Errorf("a block past the limit: :status %q grpc-status %d, want 431 and %d (GOAWAY %v, read: %v)", got, r.Status(), triple.ResourceExhausted, v.GoAway, v.Err)
		}
		return greetsOn(c, 3, "after")
	})
	for _, flood := range []struct {
		name     string
		fragment func(c *h2raw.Client) []byte
	}{
		{"far past the limit", func(c *h2raw.Client) []byte { return c.Block("x-big", strings.Repeat("q", 12000)) }},
		{"endless CONTINUATION", func(c *h2raw.Client) []byte { return c.Block("x-more", strings.Repeat("z", 200)) }},
	} {
		onConns(t, tg.addr, 4, func(c *h2raw.Client) error {
			go func() { // ends when the server hangs up, or after 16 MB
				if c.Framer.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.Block(h2raw.RequestFields(greetPath)...)}) != nil {
					return
				}
				for range 1300 {
					if c.Framer.WriteContinuation(1, false, flood.fragment(c)) != nil {
						return
					}
				}
			}()
			v := c.Read(triFrameTimeout+10*time.Second, func(v *h2raw.Conversation) bool { return v.Err != nil })
			if v.GoAway == nil || v.GoAway.ErrCode != http2.ErrCodeEnhanceYourCalm || h2raw.IsTimeout(v.Err) {
				return fmt.Errorf("%s: want GOAWAY ENHANCE_YOUR_CALM and the connection closed, got %v (read: %v)", flood.name, v.GoAway, v.Err)
			}
			return nil
		})
	}
	for range 4 {
		status, lasted, closed, err := rawHTTP1(tg.addr, "POST "+greetPath+" HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nX-Big: "+
			strings.Repeat("b", 100<<10)+"\r\nContent-Length: 12\r\n\r\n{\"name\":\"x\"}", 5*time.Second)
		if err != nil || status != "431" || !closed {
			t.Errorf("HTTP/1.1 with a 100 KiB header: status %q, closed %v after %v (%v); want 431 and the connection closed", status, closed, lasted, err)
		}
	}
}

// overLimitBlock opens stream id with a header block that goes past the
// limit in its last field, in its last frame: a HEADERS frame with the
// request's fields, CONTINUATION frames of four 1 KB fields each, and a
// last one whose field is a little larger than what the limit leaves.
// (The server ends the connection for a fragment that comes after the
// limit was passed, or that is over twice what it leaves.)
func overLimitBlock(c *h2raw.Client, id uint32) error {
	fields := h2raw.RequestFields(greetPath)
	left := triHeaderList
	for i := 0; i+1 < len(fields); i += 2 {
		left -= len(fields[i]) + len(fields[i+1]) + 32
	}
	pad := strings.Repeat("p", 1000)
	const padName = "x-pad-000"
	padSize := len(padName) + len(pad) + 32
	if err := c.Framer.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndStream: true, BlockFragment: c.Block(fields...)}); err != nil {
		return err
	}
	var frame []string
	for n := 0; left-padSize >= 200; n++ {
		frame = append(frame, fmt.Sprintf("x-pad-%03d", n), pad)
		left -= padSize
		if len(frame) == 8 {
			if err := c.Framer.WriteContinuation(id, false, c.Block(frame...)); err != nil {
				return err
			}
			frame = frame[:0]
		}
	}
	// left bytes remain: a value of that length, with its name and 32,
	// is over by the name and 32.
	frame = append(frame, "x-last", strings.Repeat("l", left))
	return c.Framer.WriteContinuation(id, true, c.Block(frame...))
}

// greetsOn calls Greet(name) on stream id of c and checks the greeting.
func greetsOn(c *h2raw.Client, id uint32, name string) error {
	if err := c.Send(id, false, greetPath); err != nil {
		return err
	}
	if err := c.Data(id, h2raw.Frame(greetRequest(name)), true); err != nil {
		return err
	}
	r := c.Read(5*time.Second, h2raw.Ended(id)).Stream(id)
	var resp greetpb.GreetResponse
	if r.Status() != 0 || len(r.Data) < 5 || proto.Unmarshal(r.Data[5:], &resp) != nil || resp.Greeting != "Hello, "+name {
		return fmt.Errorf("Greet(%s) on stream %d: %+v", name, id, r)
	}
	return nil
}

// Item: requests that stall. A unary call whose message never comes,
// stops coming (4 connections × 100 streams each) or drips, and a
// streaming message that stops, are answered DeadlineExceeded once
// protocol.frame-timeout passed; a frame that stops half-way, or a
// connection that sends nothing, is closed then; over HTTP/1.1 a body
// that stops is answered 408 and headers that stop get no answer, and
// both connections are closed.
func stalledRequests(t *testing.T, tg triTarget) {
	var wg sync.WaitGroup
	within := triFrameTimeout + 3*time.Second
	// conns connections of streams calls each, opened by send, are
	// answered DeadlineExceeded within frame-timeout.
	answered := func(name string, conns, streams int, send func(c *h2raw.Client, id uint32) error) {
		wg.Go(func() {
			start := time.Now()
			onConns(t, tg.addr, conns, func(c *h2raw.Client) error {
				return calls(c, streams, streams, triple.DeadlineExceeded, func(id uint32) error { return send(c, id) })
			})
			d := time.Since(start)
			if d > within {
				t.Errorf("%s: answered after %v, want within %v", name, d, within)
			}
			t.Logf("%s: %d×%d streams answered DeadlineExceeded within %v", name, conns, streams, d.Round(time.Millisecond))
		})
	}
	answered("headers, then nothing", 4, triStreams, func(c *h2raw.Client, id uint32) error { return c.Send(id, false, greetPath) })
	answered("a message that stops", 4, triStreams, func(c *h2raw.Client, id uint32) error {
		if err := c.Send(id, false, greetPath); err != nil {
			return err
		}
		return c.Data(id, append(prefix(0, 60000), make([]byte, 50000)...), false)
	})
	// A client stream's message that stops (each such call holds a
	// business-pool thread: 20 of them).
	answered("a streaming message that stops", 1, 20, func(c *h2raw.Client, id uint32) error {
		if err := c.Send(id, false, "/greet.GreetService/GreetClientStream"); err != nil {
			return err
		}
		return c.Data(id, append(prefix(0, 100), 1, 2, 3), false)
	})
	wg.Go(func() {
		start := time.Now()
		onConns(t, tg.addr, 2, drips)
		d := time.Since(start)
		if d > within {
			t.Errorf("a message that drips: answered after %v, want within %v", d, within)
		}
		t.Logf("a message that drips: 2×20 streams answered DeadlineExceeded within %v", d.Round(time.Millisecond))
	})
	// Each of 8 connections sends head, then nothing: it must be closed
	// within frame-timeout, after an HTTP/1.1 answer of want ("" for none).
	closes := func(name, head, want string) {
		for range 8 {
			wg.Go(func() {
				status, lasted, closed, err := rawHTTP1(tg.addr, head, within+5*time.Second)
				if err != nil || !closed || lasted > within || status != want {
					t.Errorf("%s: answered %q, the connection lasted %v (closed by the server %v, %v); want %q and closed within %v",
						name, status, lasted, closed, err, want, within)
				}
			})
		}
	}
	// A DATA frame declaring 100 bytes, and 10 of them.
	closes("a frame that stops", http2.ClientPreface+"\x00\x00\x00\x04\x00\x00\x00\x00\x00"+"\x00\x00\x64\x00\x00\x00\x00\x00\x01"+"0123456789", "")
	closes("an HTTP/2 preface that never comes", "", "")
	closes("an HTTP/1.1 body that stops", "POST "+greetPath+" HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"name\":", "408")
	closes("HTTP/1.1 headers that stop", "POST "+greetPath+" HTTP/1.1\r\nHost: t\r\n", "")
	wg.Wait()
}

// drips opens 20 Greet calls on c, each declaring a 100-byte message,
// and sends each a byte every 100ms; each must be answered
// DeadlineExceeded once frame-timeout passed since its headers.
func drips(c *h2raw.Client) error {
	const streams = 20
	for i := range uint32(streams) {
		if err := c.Send(2*i+1, false, greetPath); err != nil {
			return err
		}
		if err := c.Framer.WriteData(2*i+1, false, prefix(0, 100)); err != nil {
			return err
		}
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() { // ends when drips returns, or the connection fails
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			for i := range uint32(streams) {
				if c.Framer.WriteData(2*i+1, false, []byte{'x'}) != nil {
					return
				}
			}
		}
	}()
	v := c.Read(triFrameTimeout+5*time.Second, func(v *h2raw.Conversation) bool {
		for i := range uint32(streams) {
			if !h2raw.Ended(2*i + 1)(v) {
				return false
			}
		}
		return true
	})
	for i := range uint32(streams) {
		if r := v.Stream(2*i + 1); r.Status() != int(triple.DeadlineExceeded) {
			return fmt.Errorf("stream %d: want grpc-status %d, got %+v (read: %v)", 2*i+1, triple.DeadlineExceeded, r, v.Err)
		}
	}
	return nil
}

// Item: clients that do not take their answers. One that opens its
// windows wide and never reads the socket (Greet with a 60 KB name every
// 2ms) is no longer read from once 256 KiB of answers wait, and the
// provider closes its connection once a write stayed blocked for
// frame-timeout. (The pace keeps a call or two in flight: one hundred on
// each connection would fill the business pool, a load rather than a
// client that does not read.) One that keeps its flow-control windows
// shut on a server stream of a million greetings gets GOAWAY after
// frame-timeout, and the connection ends.
func answersNeverRead(t *testing.T, tg triTarget) {
	var once sync.Once
	req := h2raw.Frame(greetRequest(strings.Repeat("n", 60000)))
	onConns(t, tg.addr, 4, func(c *h2raw.Client) error {
		if err := c.Framer.WriteWindowUpdate(0, 1<<31-1-65535); err != nil {
			return err
		}
		c.Conn.(*net.TCPConn).SetReadBuffer(4 << 10)
		sent := 0
		for id := uint32(1); ; id += 2 {
			if sent == 3000 {
				return fmt.Errorf("the provider still reads after %d calls whose answers were not read", sent)
			}
			_ = c.Conn.SetWriteDeadline(time.Now().Add(time.Second))
			err := c.Send(id, false, greetPath)
			if err == nil {
				err = c.Data(id, req, true)
			}
			if err != nil {
				break // the provider stopped reading, or closed the connection
			}
			sent++
			time.Sleep(2 * time.Millisecond)
		}
		took, ok := waitFor(triFrameTimeout+5*time.Second, func() bool { return !tg.holds(c.Conn.LocalAddr()) })
		if !ok {
			return fmt.Errorf("the provider still holds the connection %v after %d calls whose answers were not read", c.Conn.LocalAddr(), sent)
		}
		once.Do(func() {
			t.Logf("one connection: the provider stopped reading after %d calls of 60 KB, and closed the connection %v later",
				sent, took.Round(time.Millisecond))
		})
		return nil
	}, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})

	stream, _ := proto.Marshal(&greetpb.GreetStreamRequest{Name: "x", Count: 1000000})
	onConns(t, tg.addr, 4, func(c *h2raw.Client) error {
		if err := c.Send(1, false, "/greet.GreetService/GreetServerStream"); err != nil {
			return err
		}
		if err := c.Data(1, h2raw.Frame(stream), true); err != nil {
			return err
		}
		start := time.Now()
		v := c.Read(triFrameTimeout+10*time.Second, func(v *h2raw.Conversation) bool { return v.Err != nil })
		got := len(v.Stream(1).Data)
		switch {
		case v.GoAway == nil || v.GoAway.ErrCode != http2.ErrCodeNo || !strings.Contains(string(v.GoAway.DebugData()), "window shut"):
			return fmt.Errorf("want GOAWAY NO_ERROR for the shut window, got %v (read: %v)", v.GoAway, v.Err)
		case h2raw.IsTimeout(v.Err):
			return errors.New("the connection is still open after its GOAWAY")
		case got > 65535:
			return fmt.Errorf("received %d bytes with a 65535-byte window", got)
		}
		if d := time.Since(start); d > triFrameTimeout+3*time.Second {
			return fmt.Errorf("closed after %v, want about %v", d, triFrameTimeout)
		}
		return nil
	})
}

// Item: calls of a service or method that is not there are answered
// Unimplemented (404 over HTTP/1.1), 4 connections × 300 calls.
func unknownMethods(t *testing.T, tg triTarget) {
	paths := []string{"/greet.GreetService/Nope", "/no.such.Service/Greet", "/org.example.Greeter/nope"}
	req := h2raw.Frame(greetRequest("x"))
	onConns(t, tg.addr, 4, func(c *h2raw.Client) error {
		return calls(c, 300, 50, triple.Unimplemented, func(id uint32) error {
			if err := c.Send(id, false, paths[id/2%3]); err != nil {
				return err
			}
			return c.Data(id, req, true)
		})
	})
	for _, path := range paths {
		posts(t, tg.addr, 10, path, "application/json", func(int) io.Reader { return strings.NewReader(`{"name":"x"}`) },
			http.StatusNotFound, "unimplemented")
	}
}

// Item: a request message that is not a GreetRequest is answered
// Internal, as grpc-go answers a request it cannot unmarshal (500 over
// HTTP/1.1), and the plugin serves on.
func malformedProto(t *testing.T, tg triTarget) {
	bad := [][]byte{
		{0x0a, 0x05, 'x'},              // name: 5 bytes declared, 1 there
		{0x0a, 0x02, 0xff, 0xfe},       // name: not UTF-8
		bytes.Repeat([]byte{0xff}, 11), // a tag past 64 bits
	}
	onConns(t, tg.addr, 4, func(c *h2raw.Client) error {
		// 25 at a time: 100 calls in the plugin at most, half the pool.
		return calls(c, 200, 25, triple.Internal, func(id uint32) error {
			if err := c.Send(id, false, greetPath); err != nil {
				return err
			}
			return c.Data(id, h2raw.Frame(bad[id/2%3]), true)
		})
	})
	posts(t, tg.addr, 30, greetPath, "application/proto", func(i int) io.Reader { return bytes.NewReader(bad[i%3]) },
		http.StatusInternalServerError, "internal")
}

// Item: JSON that is not a GreetRequest is answered InvalidArgument over
// gRPC (application/grpc+json) and 400 over HTTP/1.1.
func malformedJSON(t *testing.T, tg triTarget) {
	bad := []string{`{"name":`, `{"name":1}`, `{"nope":"x"}`, `not json`, `[]`}
	onConns(t, tg.addr, 4, func(c *h2raw.Client) error {
		return calls(c, 200, 50, triple.InvalidArgument, func(id uint32) error {
			if err := c.SendFields(id, false, requestWith(greetPath, "application/grpc+json")...); err != nil {
				return err
			}
			return c.Data(id, h2raw.Frame([]byte(bad[id/2%5])), true)
		})
	})
	posts(t, tg.addr, 50, greetPath, "application/json", func(i int) io.Reader { return strings.NewReader(bad[i%5]) },
		http.StatusBadRequest, "invalid_argument")
}

// Item: org.example.Greeter in wrapper mode, sent a TripleRequestWrapper
// that is not one, or one whose hessian argument is malformed (a length
// not backed by bytes, a list of 2^31 elements, lists nested 60000
// deep), answers InvalidArgument, both as dubbo-go calls it
// (application/grpc+hessian2) and as Java does (application/grpc+proto, a
// server stream), and 400 over HTTP/1.1.
func malformedWrapper(t *testing.T, tg triTarget) {
	bad := [][]byte{{0x0a, 0x05, 'h'}, {0xff, 0xff, 0xff}}
	for _, arg := range [][]byte{
		{'S', 0xff, 0xff, 'a'},
		{0x58, 'I', 0x7f, 0xff, 0xff, 0xff},
		bytes.Repeat([]byte{0x57}, 60000),
	} {
		w := wrapper.Request{SerializeType: wrapper.Hessian2, Args: [][]byte{arg}, ArgTypes: []string{"java.lang.String"}}
		bad = append(bad, w.Append(nil))
	}
	for _, contentType := range []string{"application/grpc+hessian2", "application/grpc+proto"} {
		onConns(t, tg.addr, 4, func(c *h2raw.Client) error {
			return calls(c, 100, 50, triple.InvalidArgument, func(id uint32) error {
				if err := c.SendFields(id, false, requestWith(sayHelloPath, contentType, "tri-service-version", "1.0.0")...); err != nil {
					return err
				}
				return c.Data(id, h2raw.Frame(bad[id/2%uint32(len(bad))]), true)
			})
		})
	}
	posts(t, tg.addr, 20, sayHelloPath, "application/proto", func(i int) io.Reader { return bytes.NewReader(bad[i%len(bad)]) },
		http.StatusBadRequest, "invalid_argument", "Tri-Service-Version", "1.0.0")
}

// Item: protocol.accepts = 500 against 2000 connections, twice: the
// server keeps 500 (the bench's among them) and closes the others at
// once; of those it keeps, the ones that send nothing are closed once
// frame-timeout passed without a preface, and the ones that sent an
// HTTP/2 preface are kept until the client leaves (or the idle timeout).
func connectionsPastAccepts(t *testing.T, tg triTarget) {
	const accepts, flood = 500, 2000
	for _, preface := range []bool{false, true} {
		conns := dialAll(t, tg.addr, flood)
		if preface {
			for _, c := range conns {
				io.WriteString(c, http2.ClientPreface+"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
			}
		}
		start := time.Now()
		atOnce, _ := closedByServer(conns, start, time.Second)
		kept := flood - atOnce
		if kept > accepts {
			t.Errorf("preface %v: the server kept %d of %d connections, want at most protocol.accepts = %d", preface, kept, flood, accepts)
		}
		if !preface {
			closed, last := closedByServer(conns, start, triFrameTimeout+5*time.Second)
			if closed != flood {
				t.Errorf("the server closed %d of the %d connections it kept without a preface within %v", closed-atOnce, kept, triFrameTimeout+5*time.Second)
			}
			t.Logf("without a preface: %d of %d connections refused at once, the %d others closed within %v", atOnce, flood, kept, last.Round(time.Millisecond))
		} else {
			t.Logf("with a preface: %d of %d connections refused at once, %d kept until the client left", atOnce, flood, kept)
		}
		for _, c := range conns {
			c.Close()
		}
	}
}

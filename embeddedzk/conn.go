package embeddedzk

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk/session"
	"github.com/dubbo-lab/dubbo/embeddedzk/wire"
)

const (
	// handshakeTimeout bounds how long a new connection may take to send
	// its ConnectRequest (or four-letter word).
	handshakeTimeout = 5 * time.Second
	// maxQueuedBytes closes a connection whose client stops reading.
	maxQueuedBytes = 64 << 20
	// maxClientFrame is the largest frame Java clients accept by default
	// (jute.maxbuffer); we never send more, whatever max-packet-size says.
	maxClientFrame = 0xfffff
)

// outFrame is one frame waiting for the writer. It is written only once the
// log is durable up to tag.
type outFrame struct {
	b          []byte
	tag        int64
	closeAfter bool
	// reply answers a request: the request is outstanding until the
	// reply is written (it waits for the log, or for the client to read).
	reply bool
}

// conn is one client connection. The reader goroutine handles requests in
// order; the writer goroutine drains the queue, so a slow client never
// blocks anyone else.
type conn struct {
	s      *Server
	nc     net.Conn
	ip     string
	remote string

	sessionID atomic.Int64
	timeout   atomic.Int64 // negotiated, ms

	idsMu sync.Mutex
	ids   []wire.ID

	qmu     sync.Mutex
	queue   []outFrame
	qbytes  int
	wake    chan struct{}
	closed  chan struct{}
	closeMu sync.Once

	stats connStats
}

func newConn(s *Server, nc net.Conn, ip string) *conn {
	c := &conn{
		s: s, nc: nc, ip: ip, remote: nc.RemoteAddr().String(),
		wake:   make(chan struct{}, 1),
		closed: make(chan struct{}),
		ids:    []wire.ID{{Scheme: "ip", ID: ip}},
	}
	c.stats.established = time.Now()
	return c
}

func (c *conn) authIDs() []wire.ID {
	c.idsMu.Lock()
	defer c.idsMu.Unlock()
	return append([]wire.ID(nil), c.ids...)
}

func (c *conn) addAuth(id wire.ID) {
	c.idsMu.Lock()
	defer c.idsMu.Unlock()
	for _, have := range c.ids {
		if have == id {
			return
		}
	}
	c.ids = append(c.ids, id)
}

// close tears the connection down at once: queued frames are dropped, its
// watches go, and its session (if any) stays alive until it times out.
func (c *conn) close() {
	c.closeMu.Do(func() {
		close(c.closed)
		c.nc.Close()
		c.s.watches.RemoveWatcher(c)
		if id := c.sessionID.Load(); id != 0 {
			c.s.sessions.Unbind(id, c)
		}
		c.s.forget(c)
		c.qmu.Lock()
		c.unsent(c.queue)
		c.queue, c.qbytes = nil, 0
		c.qmu.Unlock()
	})
}

// unsent stops counting the replies among frames that will not be written.
func (c *conn) unsent(frames []outFrame) {
	for _, f := range frames {
		if f.reply {
			c.s.stats.outstanding.Add(-1)
		}
	}
}

func (c *conn) isClosed() bool {
	select {
	case <-c.closed:
		return true
	default:
		return false
	}
}

// enqueue adds a frame for the writer. Frames larger than the client can
// accept are replaced by a MarshallingError reply (xid kept) so a client
// never receives a frame it must drop the connection for.
func (c *conn) enqueue(f outFrame) {
	if limit := min(c.s.cfg.MaxPacketSize, maxClientFrame); len(f.b)-4 > limit && len(f.b) >= 8 {
		xid := int32(uint32(f.b[4])<<24 | uint32(f.b[5])<<16 | uint32(f.b[6])<<8 | uint32(f.b[7]))
		c.s.logger.Warn("reply larger than the packet limit, sending an error instead",
			"remote", c.remote, "bytes", len(f.b)-4, "limit", limit)
		f.b = wire.AppendFrame(nil, &wire.ReplyHeader{Xid: xid, Zxid: f.tag, Err: wire.ErrMarshallingError})
	}
	c.qmu.Lock()
	if c.isClosed() { // close dropped the queue; nothing writes it any more
		c.qmu.Unlock()
		return
	}
	c.queue = append(c.queue, f)
	c.qbytes += len(f.b)
	if f.reply {
		c.s.stats.outstanding.Add(1)
	}
	over := c.qbytes > maxQueuedBytes
	c.qmu.Unlock()
	if over {
		c.s.logger.Warn("client is not reading its replies, closing", "remote", c.remote)
		c.close()
		return
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// reply queues a reply header and optional body.
func (c *conn) reply(xid int32, zxid int64, code wire.ErrCode, body wire.Record) {
	if code != wire.ErrOk {
		body = nil // clients read a body only on success
	}
	c.enqueue(outFrame{b: wire.AppendFrame(nil, &wire.ReplyHeader{Xid: xid, Zxid: zxid, Err: code}, body), tag: zxid, reply: true})
	c.stats.sent.Add(1)
	c.s.stats.sent.Add(1)
}

// queueEvent queues a watch notification caused by the change at zxid. As
// ZooKeeper 3.8 does, the header carries zxid -1.
func (c *conn) queueEvent(path string, ev wire.EventType, zxid int64) {
	c.enqueue(outFrame{
		b: wire.AppendFrame(nil, &wire.ReplyHeader{Xid: wire.XidNotification, Zxid: -1},
			&wire.WatcherEvent{Type: ev, State: wire.StateSyncConnected, Path: path}),
		tag: zxid,
	})
	c.stats.sent.Add(1)
	c.s.stats.sent.Add(1)
}

// writeLoop writes queued frames in order, each once the log is durable up
// to its tag; group commit makes the wait cheap.
func (c *conn) writeLoop() {
	bw := bufio.NewWriterSize(c.nc, 32<<10)
	var batch []outFrame
	for {
		select {
		case <-c.closed:
			return
		case <-c.wake:
		}
		for {
			c.qmu.Lock()
			batch, c.queue = c.queue, batch[:0]
			c.qbytes = 0
			c.qmu.Unlock()
			if len(batch) == 0 {
				break
			}
			for i, f := range batch {
				if err := c.s.waitDurable(c.s.ctx, f.tag); err != nil {
					// The log reports its failure once; this is per connection.
					c.s.logger.Debug("transaction log not durable, closing connection", "remote", c.remote, "err", err)
					c.unsent(batch[i:])
					c.close()
					return
				}
				if _, err := bw.Write(f.b); err != nil {
					c.unsent(batch[i:])
					c.close()
					return
				}
				c.unsent(batch[i : i+1]) // answered
				if f.closeAfter {
					c.unsent(batch[i+1:])
					bw.Flush()
					c.close()
					return
				}
			}
			if err := bw.Flush(); err != nil {
				c.close()
				return
			}
			clear(batch)
		}
	}
}

// next says what the reader does after a request.
type next int

const (
	keepReading next = iota
	closeNow
	closeAfterReply // the last queued frame closes the connection once written
)

// readLoop runs the handshake, then serves requests until the connection
// closes.
func (c *conn) readLoop() {
	switch c.serve() {
	case closeAfterReply:
		// Give the writer time to send the final frame.
		select {
		case <-c.closed:
		case <-time.After(c.s.handshakeTimeout):
		}
	}
	c.close()
}

func (c *conn) serve() next {
	br := bufio.NewReaderSize(c.nc, 16<<10)
	c.nc.SetReadDeadline(time.Now().Add(c.s.handshakeTimeout))
	var head [4]byte
	if _, err := io.ReadFull(br, head[:]); err != nil {
		return closeNow
	}
	if word := string(head[:]); isFourLetterWord(word) {
		c.fourLetter(word)
		return closeNow
	}
	if err := c.s.notServing(); err != nil {
		// As Apache does when it is not running: close, no reply, so the
		// client tries again later without giving up its session.
		c.s.logger.Debug("not serving, closing new connection", "remote", c.remote, "err", err)
		return closeNow
	}
	n := int32(uint32(head[0])<<24 | uint32(head[1])<<16 | uint32(head[2])<<8 | uint32(head[3]))
	if n < 0 || int(n) > c.s.cfg.MaxPacketSize {
		c.s.logger.Warn("invalid first frame length, closing", "remote", c.remote, "length", n)
		return closeNow
	}
	body, err := wire.ReadBody(br, int(n), nil)
	if err != nil {
		return closeNow
	}
	var req wire.ConnectRequest
	if err := wire.Unmarshal(body, &req); err != nil {
		c.s.logger.Warn("malformed connect request, closing", "remote", c.remote, "err", err)
		return closeNow
	}
	if !c.handshake(&req) {
		return closeAfterReply
	}
	c.nc.SetReadDeadline(time.Time{})
	var buf []byte
	for {
		n, err := wire.ReadLength(br, c.s.cfg.MaxPacketSize)
		if err != nil {
			if errors.Is(err, wire.ErrFrameTooLarge) {
				c.s.logger.Warn("packet over the size limit, closing connection", "remote", c.remote,
					"session", fmt.Sprintf("%#x", c.sessionID.Load()), "length", n, "limit", c.s.cfg.MaxPacketSize)
			}
			return closeNow
		}
		buf, err = wire.ReadBody(br, n, buf)
		if err != nil {
			return closeNow
		}
		if nx := c.handle(buf); nx != keepReading {
			return nx
		}
	}
}

// handshake answers the ConnectRequest: a new session, a resumed one, or
// the "expired" answer followed by a close.
func (c *conn) handshake(req *wire.ConnectRequest) bool {
	s := c.s
	now := time.Now()
	expired := func(why string) bool {
		s.logger.Debug("refusing session", "remote", c.remote, "session", fmt.Sprintf("%#x", req.SessionID), "why", why)
		c.enqueue(outFrame{
			b:   wire.AppendFrame(nil, &wire.ConnectResponse{Passwd: make([]byte, 16), HasReadOnly: req.HasReadOnly}),
			tag: 0, closeAfter: true,
		})
		return false
	}
	// A client that has seen a newer zxid than ours (the data dir was
	// replaced) would be refused forever; telling it the session expired
	// lets it start over.
	if req.LastZxidSeen > s.lastZxid.Load() {
		return expired("client has seen a newer zxid")
	}
	timeout := s.sessions.Negotiate(req.TimeOut)
	resp := &wire.ConnectResponse{TimeOut: int32(timeout.Milliseconds()), HasReadOnly: req.HasReadOnly}
	var tag int64
	if req.SessionID == 0 {
		id := s.sessions.NewID(now)
		pw := session.NewPassword()
		s.mu.Lock()
		x := s.tree.CreateSession(id, int32(timeout.Milliseconds()), pw, s.nextZxid(), now.UnixMilli())
		s.commit(x, nil)
		s.sessions.Add(id, pw, timeout, now)
		s.sessions.Bind(id, c)
		tag = x.Zxid
		s.mu.Unlock()
		resp.SessionID, resp.Passwd = id, pw
	} else {
		prev, ok := s.sessions.Resume(req.SessionID, req.Passwd, timeout, c, now)
		if !ok {
			return expired("unknown or expired session, or wrong password")
		}
		if p, ok := prev.(*conn); ok && p != c {
			p.close()
		}
		resp.SessionID, resp.Passwd = req.SessionID, req.Passwd
		tag = s.lastZxid.Load()
	}
	c.sessionID.Store(resp.SessionID)
	c.timeout.Store(timeout.Milliseconds())
	c.enqueue(outFrame{b: wire.AppendFrame(nil, resp), tag: tag})
	c.stats.noteConnect()
	return true
}

package transport

import (
	"net"
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/internal/fastpath"
	"github.com/dubbo-lab/dubbo/internal/sockio"
	"github.com/dubbo-lab/dubbo/node/protocol"
)

// maxPending bounds the bytes queued for a peer that stopped reading; past
// it the connection is given up rather than growing without limit.
const maxPending = 64 << 20

// newWriter is the coalescing writer of a connection (fastpath.Writer): a
// write blocked for stall (a peer that stopped reading) fails it, and so
// do maxPending bytes of frames waiting for the peer; onFail (may be nil)
// runs when it fails. It shares sock with the connection's reader.
func newWriter(conn net.Conn, sock *sockio.Conn, stall time.Duration, onFail func()) *fastpath.Writer {
	return fastpath.NewWriter(conn, sock, fastpath.WriterConfig{Stall: stall, MaxPending: maxPending, OnFail: onFail})
}

// encoders hands out per-goroutine encoders with a scratch buffer, so
// frames are encoded outside the writer's lock.
type encoders struct {
	pool sync.Pool
}

type encoder struct {
	*protocol.Encoder
	buf []byte
}

func newEncoders(payload int) *encoders {
	e := &encoders{}
	e.pool.New = func() any { return &encoder{Encoder: protocol.NewEncoder(payload)} }
	return e
}

func (e *encoders) get() *encoder { return e.pool.Get().(*encoder) }

func (e *encoders) put(enc *encoder) {
	if cap(enc.buf) > 64<<10 {
		enc.buf = nil
	}
	e.pool.Put(enc)
}

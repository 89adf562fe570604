package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// The Calls stream carries many calls at once, each a frame (one
// BytesValue) tagged with a request id the caller picks:
//
//	caller → callee: 'c' id timeout call   a call; timeout is the µs left
//	                                       (0: none), call as EncodeCall
//	caller → callee: 'x' id                the caller gave up: cancel it
//	callee → caller: 'r' id reply          the reply, as EncodeReply
//
// id and timeout are uvarints. One stream for a plugin's life saves the
// per-call stream setup, headers and trailers of a unary RPC; calls in
// flight together share the writes.
const (
	frameCall   = 'c'
	frameCancel = 'x'
	frameReply  = 'r'
)

// ErrCallsClosed is the error of calls on a Calls that was closed.
var ErrCallsClosed = errors.New("calls stream closed")

// Calls is the caller's end of a Calls stream; safe for concurrent use.
type Calls struct {
	stream grpc.ClientStream
	cancel context.CancelFunc
	done   chan struct{} // closed when the stream ended; err says why

	sendMu sync.Mutex // gRPC allows one SendMsg at a time

	mu      sync.Mutex
	pending map[uint64]chan []byte
	nextID  uint64
	err     error
}

func openCalls(cc grpc.ClientConnInterface, method string) (*Calls, error) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := cc.NewStream(ctx, &callsStream, method)
	if err != nil {
		cancel()
		return nil, err
	}
	c := &Calls{stream: s, cancel: cancel, done: make(chan struct{}), pending: make(map[uint64]chan []byte)}
	go c.read()
	return c, nil
}

// read hands each reply to its caller until the stream ends; it is the
// one goroutine of a Calls, and ends with the stream.
func (c *Calls) read() {
	var err error
	for {
		m := new(wrapperspb.BytesValue)
		if err = c.stream.RecvMsg(m); err != nil {
			break
		}
		kind, id, reply, ferr := parseFrame(m.Value)
		if ferr != nil || kind != frameReply {
			err = fmt.Errorf("%w: bad frame from the other side: %v", ErrCorrupt, ferr)
			c.cancel()
			break
		}
		c.mu.Lock()
		ch := c.pending[id]
		delete(c.pending, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- reply // buffered: never blocks
		}
	}
	if err == io.EOF {
		err = errors.New("the other side ended the calls stream")
	}
	c.mu.Lock()
	c.err = err
	c.pending = nil
	c.mu.Unlock()
	close(c.done)
}

// Call sends one encoded call and waits for its reply, ctx's end, or the
// stream's. ctx's deadline travels with the call. Errors are ctx.Err(), or
// the gRPC error that ended the stream.
func (c *Calls) Call(ctx context.Context, call []byte) ([]byte, error) {
	ch := make(chan []byte, 1)
	c.mu.Lock()
	if c.pending == nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()

	var timeout uint64
	if dl, ok := ctx.Deadline(); ok {
		timeout = uint64(max(time.Until(dl).Microseconds(), 1))
	}
	if len(call) > maxFramed {
		c.forget(id)
		// Refused here: gRPC would end the whole stream for it.
		return nil, status.Errorf(codes.ResourceExhausted, "the call is %d bytes, more than the %d a plugin call may have", len(call), maxFramed)
	}
	frame := make([]byte, 0, 1+2*binary.MaxVarintLen64+len(call))
	frame = append(frame, frameCall)
	frame = binary.AppendUvarint(frame, id)
	frame = binary.AppendUvarint(frame, timeout)
	frame = append(frame, call...)
	if err := c.send(frame); err != nil {
		// The stream broke; its reader says how.
		select {
		case <-c.done:
			return nil, c.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	select {
	case reply := <-ch:
		return reply, nil
	case <-c.done:
		select {
		case reply := <-ch: // came in just before the end
			return reply, nil
		default:
			return nil, c.err
		}
	case <-ctx.Done():
		if c.forget(id) {
			_ = c.send(binary.AppendUvarint([]byte{frameCancel}, id))
		}
		return nil, ctx.Err()
	}
}

// forget drops a call the caller no longer waits for; it says whether the
// reply was still to come.
func (c *Calls) forget(id uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, waiting := c.pending[id]
	delete(c.pending, id)
	return waiting
}

// maxFramed is the largest call or reply a frame carries, within
// MaxMessage with room for the frame header and protobuf's.
const maxFramed = MaxMessage - 64

func (c *Calls) send(frame []byte) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return c.stream.SendMsg(&wrapperspb.BytesValue{Value: frame})
}

// Done is closed when the stream has ended.
func (c *Calls) Done() <-chan struct{} { return c.done }

// Close ends the stream; calls waiting fail with a Canceled status.
func (c *Calls) Close() error {
	c.cancel()
	<-c.done
	return nil
}

// serveCalls is the callee's end: it runs the calls on a set of worker
// goroutines, as many as were ever busy at once (handlers may block), and
// returns when the stream ends, once the workers have. Workers that live
// on, rather than a goroutine per call, keep the stacks the hessian
// decoder and reflection grew.
func serveCalls(s grpc.ServerStream, inv Invoker) error {
	ctx := s.Context()
	var (
		wg      sync.WaitGroup
		work    = make(chan func()) // to an idle worker
		sendMu  sync.Mutex
		mu      sync.Mutex
		cancels = make(map[uint64]context.CancelFunc)
	)
	defer func() {
		close(work)
		wg.Wait()
	}()
	run := func(f func()) {
		select {
		case work <- f:
		default:
			wg.Go(func() {
				f()
				for f := range work {
					f()
				}
			})
		}
	}
	for {
		m := new(wrapperspb.BytesValue)
		if err := s.RecvMsg(m); err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
		kind, id, rest, err := parseFrame(m.Value)
		if err != nil {
			return fmt.Errorf("%w: bad frame: %v", ErrCorrupt, err)
		}
		switch kind {
		case frameCancel:
			mu.Lock()
			cancel := cancels[id]
			mu.Unlock()
			if cancel != nil {
				cancel()
			}
		case frameCall:
			timeout, n := binary.Uvarint(rest)
			if n <= 0 {
				return fmt.Errorf("%w: bad call timeout", ErrCorrupt)
			}
			call := rest[n:]
			callCtx, cancel := context.WithCancel(ctx)
			if timeout > 0 {
				callCtx, cancel = context.WithTimeout(ctx, time.Duration(min(timeout, 1<<40))*time.Microsecond)
			}
			mu.Lock()
			cancels[id] = cancel
			mu.Unlock()
			run(func() {
				reply := inv.Invoke(callCtx, call)
				mu.Lock()
				delete(cancels, id)
				mu.Unlock()
				cancel()
				if len(reply) > maxFramed {
					// Sending it would end the stream, and every call with it.
					reply = ErrorReply(&rpc.CallError{Kind: rpc.ErrProvider,
						Detail: fmt.Sprintf("the reply is %d bytes, more than the %d a plugin reply may have", len(reply), maxFramed)})
				}
				frame := make([]byte, 0, 1+binary.MaxVarintLen64+len(reply))
				frame = append(frame, frameReply)
				frame = binary.AppendUvarint(frame, id)
				frame = append(frame, reply...)
				sendMu.Lock()
				_ = s.SendMsg(&wrapperspb.BytesValue{Value: frame}) // fails only when the stream ended
				sendMu.Unlock()
			})
		default:
			return fmt.Errorf("%w: unknown frame kind %q", ErrCorrupt, kind)
		}
	}
}

func parseFrame(b []byte) (kind byte, id uint64, rest []byte, err error) {
	if len(b) < 2 {
		return 0, 0, nil, errors.New("short frame")
	}
	id, n := binary.Uvarint(b[1:])
	if n <= 0 {
		return 0, 0, nil, errors.New("bad request id")
	}
	return b[0], id, b[1+n:], nil
}

// Err says why the stream ended; nil while it is open.
func (c *Calls) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

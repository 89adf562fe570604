package dispatch

import (
	"errors"
	"fmt"
	"sync"
)

// Kind is the kind of network event being dispatched.
type Kind uint8

// Event kinds, as Dubbo's ChannelHandler sees them.
const (
	Connect    Kind = iota // a connection opened
	Disconnect             // a connection closed
	Request                // a request arrived (heartbeats never get here)
	Response               // a response arrived
)

func (k Kind) String() string {
	switch k {
	case Connect:
		return "connect"
	case Disconnect:
		return "disconnect"
	case Request:
		return "request"
	case Response:
		return "response"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Dispatcher names, as Dubbo users type them in the dispatcher parameter.
const (
	All        = "all"        // everything to the pool (default)
	Direct     = "direct"     // everything on the IO goroutine
	Message    = "message"    // requests and responses to the pool
	Execution  = "execution"  // requests to the pool
	Connection = "connection" // connect/disconnect on one ordered queue, requests and responses to the pool
)

// where an event runs
type target uint8

const (
	inline target = iota
	pooled
	serial
)

var routes = map[string][4]target{ // indexed by Kind
	All:        {pooled, pooled, pooled, pooled},
	Direct:     {inline, inline, inline, inline},
	Message:    {inline, inline, pooled, pooled},
	Execution:  {inline, inline, pooled, inline},
	Connection: {serial, serial, pooled, pooled},
}

// Dispatcher routes events to a pool or runs them on the caller's (IO)
// goroutine. Safe for concurrent use.
type Dispatcher struct {
	name   string
	route  [4]target
	pool   *Pool
	serial *serialQueue
}

// NewDispatcher returns the dispatcher called name ("" means all) that runs
// pooled events on pool. The connection dispatcher starts a goroutine of its
// own, stopped by Close.
func NewDispatcher(name string, pool *Pool) (*Dispatcher, error) {
	if name == "" {
		name = All
	}
	r, ok := routes[name]
	if !ok {
		return nil, fmt.Errorf("unknown dispatcher %q: use all, direct, message, execution or connection", name)
	}
	if pool == nil && name != Direct {
		return nil, errors.New("dispatcher " + name + " needs a thread pool")
	}
	d := &Dispatcher{name: name, route: r, pool: pool}
	if name == Connection {
		d.serial = newSerialQueue()
	}
	return d, nil
}

// Name is the dispatcher's configured name.
func (d *Dispatcher) Name() string { return d.name }

// Pool is the pool pooled events run on (nil for direct).
func (d *Dispatcher) Pool() *Pool { return d.pool }

// Dispatch runs task according to k: inline before returning, or on the
// pool or ordered queue. Only a Request can be refused (with the pool's
// *RejectedError, so the caller can answer status 100); other events run
// inline when the pool is full, because dropping a disconnect or a response
// would leak state.
func (d *Dispatcher) Dispatch(k Kind, task func()) error {
	if int(k) >= len(d.route) {
		return fmt.Errorf("dispatch: unknown event %v", k)
	}
	switch d.route[k] {
	case pooled:
		err := d.pool.Submit(task)
		if err == nil || k == Request {
			return err
		}
	case serial:
		if d.serial.push(task) {
			return nil
		}
	}
	task()
	return nil
}

// RunHere runs a request's task on the calling goroutine when the
// dispatcher would run it on the pool and the pool has room (Pool.RunHere);
// it says whether it ran it.
func (d *Dispatcher) RunHere(task func()) bool {
	return d.route[Request] == pooled && d.pool.RunHere(task)
}

// Close stops the ordered queue of the connection dispatcher after it has
// run what it holds. The pool belongs to the caller and stays open.
func (d *Dispatcher) Close() {
	if d.serial != nil {
		d.serial.close()
	}
}

// serialQueue runs tasks one at a time in order on one goroutine. It is
// unbounded, as Java's connection-ordered executor is, so pushing never
// blocks the IO goroutine.
type serialQueue struct {
	mu      sync.Mutex
	tasks   []func()
	closed  bool
	wake    chan struct{}
	stopped chan struct{}
}

func newSerialQueue() *serialQueue {
	q := &serialQueue{wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	go q.loop()
	return q
}

func (q *serialQueue) push(task func()) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	q.tasks = append(q.tasks, task)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	return true
}

func (q *serialQueue) loop() {
	defer close(q.stopped)
	var batch []func()
	for {
		q.mu.Lock()
		batch, q.tasks = q.tasks, batch[:0]
		closed := q.closed
		q.mu.Unlock()
		for i, t := range batch {
			t()
			batch[i] = nil
		}
		if closed && len(batch) == 0 {
			return
		}
		if len(batch) == 0 {
			<-q.wake
		}
	}
}

func (q *serialQueue) close() {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
	<-q.stopped
}

package dispatch

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
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

// dispatchers is the dispatcher extension table: each name Dubbo users
// write in protocol.dispatcher and the dispatcher it builds, as Java's
// AllDispatcher, DirectDispatcher, ... do. It drives NewDispatcher,
// DispatcherNames and CheckDispatcher. Read-only.
var dispatchers = map[string]func(pool *Pool) (*Dispatcher, error){
	// AllChannelHandler: every event in the pool.
	All: routed(All, pooled, pooled, pooled, pooled),
	// DirectChannelHandler: every event on the IO goroutine; no pool.
	Direct: routed(Direct, inline, inline, inline, inline),
	// MessageOnlyChannelHandler: requests and responses in the pool,
	// connection events on the IO goroutine.
	Message: routed(Message, inline, inline, pooled, pooled),
	// ExecutionChannelHandler: requests in the pool, the rest on the IO
	// goroutine.
	Execution: routed(Execution, inline, inline, pooled, inline),
	// ConnectionOrderedChannelHandler: connection events one at a time, in
	// order, on one goroutine of their own; requests and responses in the
	// pool.
	Connection: routed(Connection, serial, serial, pooled, pooled),
}

// routed makes a dispatcher that runs Connect, Disconnect, Request and
// Response where the targets say.
func routed(name string, connect, disconnect, request, response target) func(*Pool) (*Dispatcher, error) {
	route := [4]target{connect, disconnect, request, response}
	return func(pool *Pool) (*Dispatcher, error) {
		if pool == nil && route != [4]target{} {
			return nil, errors.New("dispatcher " + name + " needs a thread pool")
		}
		d := &Dispatcher{name: name, route: route, pool: pool}
		if connect == serial || disconnect == serial {
			d.serial = newSerialQueue()
		}
		return d, nil
	}
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
	newDispatcher, ok := dispatchers[orName(name, All)]
	if !ok {
		return nil, CheckDispatcher(name)
	}
	return newDispatcher(pool)
}

// DispatcherNames lists the dispatcher names, sorted.
func DispatcherNames() []string { return sortedKeys(dispatchers) }

// CheckDispatcher reports whether name ("" is all) is a dispatcher, with
// the known names when it is not.
func CheckDispatcher(name string) error {
	if _, ok := dispatchers[orName(name, All)]; !ok {
		return fmt.Errorf("unknown dispatcher %q; known: %s", name, joinNames(DispatcherNames()))
	}
	return nil
}

func orName(name, def string) string {
	if name == "" {
		return def
	}
	return name
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

func joinNames(names []string) string { return strings.Join(names, ", ") }

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

// Hold is for a request that starts on the calling goroutine and is
// completed elsewhere (a plugin's call): when the dispatcher runs requests
// in the pool, it takes one of the pool's threads for it until release
// (Pool.Hold), and says false when the pool has none free; a dispatcher
// that runs requests on the IO goroutine holds nothing.
func (d *Dispatcher) Hold() (release func(), ok bool) {
	if d.route[Request] != pooled {
		return func() {}, true
	}
	return d.pool.Hold()
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

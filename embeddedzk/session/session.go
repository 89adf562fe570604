// Package session tracks live ZooKeeper sessions: ids and passwords,
// negotiated timeouts, expiry in tick-sized buckets (as ZooKeeper's
// SessionTrackerImpl does), and which connection currently owns each
// session. The durable part of a session (id, timeout, password) lives in
// the data tree; this package is the in-memory clock around it.
package session

import (
	"crypto/rand"
	"crypto/subtle"
	"sort"
	"sync"
	"time"
)

// PasswordLen is the size of a session password.
const PasswordLen = 16

// Info describes one live session.
type Info struct {
	ID       int64
	Timeout  time.Duration
	ExpireAt time.Time
	Owner    any // the connection bound to it, nil while disconnected
}

type entry struct {
	passwd  []byte
	timeout time.Duration
	bucket  int64 // expiry time in ms, a multiple of the tick
	owner   any
	closing bool
}

// Tracker is safe for concurrent use.
type Tracker struct {
	tick     time.Duration
	min, max time.Duration

	mu       sync.Mutex
	sessions map[int64]*entry
	buckets  map[int64]map[int64]struct{}
	lastID   int64
}

// NewTracker returns a tracker that checks expiry every tick and clamps
// requested timeouts to [min, max].
func NewTracker(tick, min, max time.Duration) *Tracker {
	return &Tracker{
		tick: tick, min: min, max: max,
		sessions: make(map[int64]*entry),
		buckets:  make(map[int64]map[int64]struct{}),
	}
}

// Negotiate clamps a requested timeout (ms) to the configured bounds.
func (t *Tracker) Negotiate(requestedMs int32) time.Duration {
	d := time.Duration(requestedMs) * time.Millisecond
	if d < t.min {
		d = t.min
	}
	if d > t.max {
		d = t.max
	}
	return d
}

// NewID returns a fresh session id, unique for this process and, being
// derived from the clock like ZooKeeper's, across restarts.
func (t *Tracker) NewID(now time.Time) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	id := int64(uint64(now.UnixMilli()<<24) >> 8)
	if id <= t.lastID {
		id = t.lastID + 1
	}
	for t.sessions[id] != nil {
		id++
	}
	t.lastID = id
	return id
}

// NewPassword returns 16 random bytes.
func NewPassword() []byte {
	b := make([]byte, PasswordLen)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error()) // never happens on supported platforms
	}
	return b
}

func (t *Tracker) bucketFor(now time.Time, timeout time.Duration) int64 {
	tick := t.tick.Milliseconds()
	if tick <= 0 {
		tick = 1
	}
	at := now.Add(timeout).UnixMilli()
	return (at/tick + 1) * tick
}

func (t *Tracker) place(id int64, e *entry, bucket int64) {
	if e.bucket == bucket {
		return
	}
	if b := t.buckets[e.bucket]; b != nil {
		delete(b, id)
		if len(b) == 0 {
			delete(t.buckets, e.bucket)
		}
	}
	e.bucket = bucket
	b := t.buckets[bucket]
	if b == nil {
		b = make(map[int64]struct{})
		t.buckets[bucket] = b
	}
	b[id] = struct{}{}
}

// Add starts tracking a session that expires timeout after now unless touched.
func (t *Tracker) Add(id int64, passwd []byte, timeout time.Duration, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := &entry{passwd: passwd, timeout: timeout}
	if old := t.sessions[id]; old != nil {
		t.place(id, old, 0)
		delete(t.buckets, 0)
	}
	t.sessions[id] = e
	t.place(id, e, t.bucketFor(now, timeout))
	if id > t.lastID {
		t.lastID = id
	}
}

// Touch pushes the session's expiry out; false if it is unknown or closing.
func (t *Tracker) Touch(id int64, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.sessions[id]
	if e == nil || e.closing {
		return false
	}
	t.place(id, e, t.bucketFor(now, e.timeout))
	return true
}

// Resume validates a reconnect: the session must be live and the password
// right. On success it takes the new timeout, binds owner and returns the
// previous owner (to be closed) with ok true.
func (t *Tracker) Resume(id int64, passwd []byte, timeout time.Duration, owner any, now time.Time) (prev any, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.sessions[id]
	if e == nil || e.closing || subtle.ConstantTimeCompare(e.passwd, passwd) != 1 {
		return nil, false
	}
	prev, e.owner = e.owner, owner
	e.timeout = timeout
	t.place(id, e, t.bucketFor(now, timeout))
	return prev, true
}

// Bind makes owner the connection of session id.
func (t *Tracker) Bind(id int64, owner any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.sessions[id]; e != nil {
		e.owner = owner
	}
}

// Unbind clears the owner if it is still owner (a newer connection may
// have taken the session over).
func (t *Tracker) Unbind(id int64, owner any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.sessions[id]; e != nil && e.owner == owner {
		e.owner = nil
	}
}

// Owner returns the connection bound to id, if any.
func (t *Tracker) Owner(id int64) any {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.sessions[id]; e != nil {
		return e.owner
	}
	return nil
}

// Alive reports whether id is tracked and not closing.
func (t *Tracker) Alive(id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.sessions[id]
	return e != nil && !e.closing
}

// MarkClosing stops a session from being touched or resumed while it is
// being closed; false if it was unknown or already closing.
func (t *Tracker) MarkClosing(id int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.sessions[id]
	if e == nil || e.closing {
		return false
	}
	e.closing = true
	return true
}

// Remove forgets a session.
func (t *Tracker) Remove(id int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.sessions[id]
	if e == nil {
		return
	}
	if b := t.buckets[e.bucket]; b != nil {
		delete(b, id)
		if len(b) == 0 {
			delete(t.buckets, e.bucket)
		}
	}
	delete(t.sessions, id)
}

// Expired marks and returns, sorted, the sessions whose expiry bucket is
// at or before now. They stay tracked (closing) until Remove.
func (t *Tracker) Expired(now time.Time) []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	ms := now.UnixMilli()
	var out []int64
	for at, ids := range t.buckets {
		if at > ms {
			continue
		}
		for id := range ids {
			if e := t.sessions[id]; e != nil && !e.closing {
				e.closing = true
				out = append(out, id)
			}
		}
		delete(t.buckets, at)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Len is the number of tracked sessions.
func (t *Tracker) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sessions)
}

// List describes every tracked session, sorted by id.
func (t *Tracker) List() []Info {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Info, 0, len(t.sessions))
	for id, e := range t.sessions {
		out = append(out, Info{ID: id, Timeout: e.timeout, ExpireAt: time.UnixMilli(e.bucket), Owner: e.owner})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Timeout returns the negotiated timeout of id.
func (t *Tracker) Timeout(id int64) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.sessions[id]; e != nil {
		return e.timeout
	}
	return 0
}

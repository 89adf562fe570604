// Package syncbuf is a buffer one goroutine writes (a child process's
// output pipe, a logger) while another reads it: how the test harnesses
// watch the processes they start.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer is safe for concurrent use; the zero value is empty and unbounded.
type Buffer struct {
	// Limit, if set, is how many bytes are kept: later writes are dropped
	// (the start of a long log is enough to diagnose a failure).
	Limit int

	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Limit > 0 && s.b.Len() > s.Limit {
		return len(p), nil
	}
	return s.b.Write(p)
}

// String returns everything kept so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

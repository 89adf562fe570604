package registry

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/dubbo-lab/dubbo/node/url"
)

// Memory is a Registry held in memory, for tests of the packages that use
// a registry (directory, provider, consumer) and for single-process setups.
// It keeps the same contract as the ZooKeeper registry: full lists per
// category, the first notification before Subscribe returns, one
// notification at a time.
type Memory struct {
	// deliver serialises changes with their notifications, so listeners see
	// them in order. Listeners must not call back into the Memory.
	deliver sync.Mutex
	mu      sync.Mutex
	urls    []*url.URL
	subs    []*memorySub
	closed  bool
}

type memorySub struct {
	consumer *url.URL
	l        Listener
	last     map[string][]*url.URL
}

// NewMemory returns an empty in-memory registry.
func NewMemory() *Memory { return &Memory{} }

// Register adds u (once) and notifies matching subscribers.
func (m *Memory) Register(ctx context.Context, u *url.URL) error {
	return m.change(ctx, func() {
		if !slices.ContainsFunc(m.urls, u.Equal) {
			m.urls = append(m.urls, u.Clone())
		}
	})
}

// Unregister removes u and notifies matching subscribers.
func (m *Memory) Unregister(ctx context.Context, u *url.URL) error {
	return m.change(ctx, func() {
		m.urls = slices.DeleteFunc(m.urls, u.Equal)
	})
}

// Subscribe notifies l of every category of consumer now and on changes.
func (m *Memory) Subscribe(ctx context.Context, consumer *url.URL, l Listener) error {
	return m.change(ctx, func() {
		m.subs = append(m.subs, &memorySub{consumer: consumer.Clone(), l: l, last: make(map[string][]*url.URL)})
	})
}

// Unsubscribe drops the subscriptions made with an equal consumer URL.
func (m *Memory) Unsubscribe(ctx context.Context, consumer *url.URL) error {
	return m.change(ctx, func() {
		m.subs = slices.DeleteFunc(m.subs, func(s *memorySub) bool { return s.consumer.Equal(consumer) })
	})
}

// Close drops everything; later calls fail.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed, m.urls, m.subs = true, nil, nil
	return nil
}

// URLs returns every registered URL, sorted.
func (m *Memory) URLs() []*url.URL {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*url.URL, len(m.urls))
	for i, u := range m.urls {
		out[i] = u.Clone()
	}
	SortURLs(out)
	return out
}

func (m *Memory) change(ctx context.Context, apply func()) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.deliver.Lock()
	defer m.deliver.Unlock()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return fmt.Errorf("memory registry closed")
	}
	apply()
	type pending struct {
		l Listener
		n Notification
	}
	var out []pending
	for _, s := range m.subs {
		for _, cat := range SubscribedCategories(s.consumer) {
			matched := []*url.URL{}
			for _, u := range m.urls {
				if Category(u) == cat && MatchService(s.consumer, u) {
					matched = append(matched, u.Clone())
				}
			}
			SortURLs(matched)
			if prev, ok := s.last[cat]; ok && SameURLs(prev, matched) {
				continue
			}
			s.last[cat] = matched
			out = append(out, pending{s.l, Notification{Consumer: s.consumer, Category: cat, URLs: matched}})
		}
	}
	m.mu.Unlock()
	for _, p := range out {
		p.l.Notify(p.n)
	}
	return nil
}

var _ Registry = (*Memory)(nil)

package registry

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/node/url"
)

// CategoryApplicationProviders is the cache file's list of the providers
// that application-level discovery (Dubbo 3: mapping, instances, their
// metadata) found for a service; no registry folder has this name.
const CategoryApplicationProviders = "application-providers"

// FileCache keeps the last notified lists of every subscription in a JSON
// file, so that a consumer started while the registry is down still knows
// its providers. The file maps a subscription key (the consumer's service
// key, [group/]interface[:version]) to category → URL strings:
//
//	{"org.example.Greeter:1.0.0": {"providers": ["dubbo://..."], "routers": [],
//	                               "application-providers": ["dubbo://..."]}}
//
// Besides the registry's categories, CategoryApplicationProviders holds
// what application-level discovery found for the service.
//
// The file holds every subscription, so it is written in the background,
// at most once per second ([DefaultWriteEvery]): a change after a quiet
// second is on disk at once, a burst of changes (a consumer of 500
// services starting, a thousand providers restarting) costs one write per
// second instead of one per notification, as Java Dubbo saves its cache
// file asynchronously. A write prints only the keys that changed since the
// last one; the others are copied as written. Close (or Flush) writes what
// is left.
//
// A FileCache is safe for concurrent use. The zero path disables it.
type FileCache struct {
	path string
	// every is the least time between two writes of the file.
	every time.Duration

	mu        sync.Mutex
	entries   map[string]*cacheEntry
	changed   bool        // entries differ from the file
	timer     *time.Timer // a write is scheduled
	lastWrite time.Time
	err       error // the last write's failure, not reported yet

	writing sync.Mutex // one write at a time, in order
}

// cacheEntry is one key's lists: the URLs as notified (shared, never
// changed), and the entry as last encoded for the file.
type cacheEntry struct {
	lists   map[string][]*url.URL
	version uint64 // bumped by every change
	encoded []byte // "key":{...}, of version encAt
	encAt   uint64
}

// DefaultWriteEvery is the least time between two writes of a cache file.
const DefaultWriteEvery = time.Second

// OpenFileCache reads path if it exists. A missing or corrupt file gives an
// empty cache (the error is returned for logging, the cache is usable).
// An empty path gives a cache that remembers nothing.
func OpenFileCache(path string) (*FileCache, error) {
	c := &FileCache{path: path, every: DefaultWriteEvery, entries: make(map[string]*cacheEntry)}
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("registry cache %s: %w", path, err)
	}
	var stored map[string]map[string][]string
	if err := json.Unmarshal(b, &stored); err != nil {
		return c, fmt.Errorf("registry cache %s: ignoring corrupt file: %w", path, err)
	}
	for key, cats := range stored {
		lists := make(map[string][]*url.URL, len(cats))
		for cat, strs := range cats {
			urls := make([]*url.URL, 0, len(strs))
			for _, s := range strs {
				if u, err := url.Parse(s); err == nil {
					urls = append(urls, u)
				}
			}
			lists[cat] = urls
		}
		c.entries[key] = &cacheEntry{lists: lists, version: 1}
	}
	return c, nil
}

// Path is the file the cache writes, "" when disabled.
func (c *FileCache) Path() string { return c.path }

// Get returns the cached lists of key by category (URLs that did not
// parse when the file was read are left out); ok is false when nothing is
// cached for key. The URLs are shared: clone one before changing it.
func (c *FileCache) Get(key string) (lists map[string][]*url.URL, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	return maps.Clone(e.lists), true
}

// Put records the list of one category of key and schedules a write of
// the file when it changed. The URLs are kept as they are: the caller does
// not change them afterwards. The error is that of an earlier write that
// failed (reported once; the next write tries again).
func (c *FileCache) Put(key, category string, urls []*url.URL) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.entries[key]
	if e == nil {
		e = &cacheEntry{lists: make(map[string][]*url.URL)}
		c.entries[key] = e
	}
	if old, ok := e.lists[category]; ok && SameURLs(old, urls) {
		return nil
	}
	e.lists[category] = slices.Clone(urls)
	e.version++
	if c.path == "" {
		return nil
	}
	c.changed = true
	if c.timer == nil {
		c.timer = time.AfterFunc(max(c.every-time.Since(c.lastWrite), 0), func() { c.save() })
	}
	err := c.err
	c.err = nil
	return err
}

// Flush writes the changes not written yet, now.
func (c *FileCache) Flush() error {
	c.mu.Lock()
	if c.timer != nil && c.timer.Stop() {
		c.timer = nil
	}
	c.mu.Unlock()
	c.save()
	c.mu.Lock()
	defer c.mu.Unlock()
	err := c.err
	c.err = nil
	return err
}

// save writes the file if the entries changed since the last write. The
// entries that changed are copied under mu and encoded outside it (their
// lists are replaced by Put, never changed in place); the others are
// copied as last encoded.
func (c *FileCache) save() {
	c.writing.Lock()
	defer c.writing.Unlock()
	c.mu.Lock()
	c.timer = nil
	if !c.changed || c.path == "" {
		c.mu.Unlock()
		return
	}
	type part struct {
		key     string
		e       *cacheEntry
		version uint64
		lists   map[string][]*url.URL // nil: e.encoded is current
		encoded []byte
	}
	parts := make([]part, 0, len(c.entries))
	for key, e := range c.entries {
		p := part{key: key, e: e, version: e.version, encoded: e.encoded}
		if e.encoded == nil || e.encAt != e.version {
			p.lists = maps.Clone(e.lists)
		}
		parts = append(parts, p)
	}
	c.changed = false
	c.lastWrite = time.Now()
	c.mu.Unlock()

	slices.SortFunc(parts, func(a, b part) int { return strings.Compare(a.key, b.key) })
	size := 2
	for i := range parts {
		if parts[i].lists != nil {
			parts[i].encoded = encodeEntry(parts[i].key, parts[i].lists)
		}
		size += len(parts[i].encoded) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, p := range parts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, p.encoded...)
	}
	b = append(b, '}')
	err := c.write(b)

	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range parts {
		if p.lists != nil && p.e.version == p.version {
			p.e.encoded, p.e.encAt = p.encoded, p.version
		}
	}
	if err != nil {
		c.err, c.changed = err, true
	}
}

// encodeEntry is one key of the file: "key":{"category":["url",...],...}.
func encodeEntry(key string, lists map[string][]*url.URL) []byte {
	strs := make(map[string][]string, len(lists))
	for cat, urls := range lists {
		s := make([]string, len(urls))
		for i, u := range urls {
			s[i] = u.String()
		}
		strs[cat] = s
	}
	k, _ := json.Marshal(key)  // a string always encodes
	v, _ := json.Marshal(strs) // so does a map of string slices
	return append(append(k, ':'), v...)
}

func (c *FileCache) write(b []byte) error {
	if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
		return fmt.Errorf("registry cache: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.path), filepath.Base(c.path)+".tmp*")
	if err != nil {
		return fmt.Errorf("registry cache: %w", err)
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("registry cache %s: %w", c.path, err)
	}
	if err := os.Rename(tmp.Name(), c.path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("registry cache %s: %w", c.path, err)
	}
	return nil
}

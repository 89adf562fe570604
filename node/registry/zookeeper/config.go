package zookeeper

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/node/registry"
)

// Config-center rule documents (PROTOCOLS.md C.4) live as node data under
// /dubbo/config/<group>/<key>; Dubbo's default group is "dubbo". Keys are
// <interface>:<version>:<group>.condition-router, <app>.tag-router,
// <interface>:<version>:<group>.configurators and so on.

// DefaultConfigGroup is Dubbo's config-center group.
const DefaultConfigGroup = "dubbo"

// ConfigFunc is registry.ConfigFunc.
type ConfigFunc = registry.ConfigFunc

// configWatch is one watched node (a config key or a mapping); only the
// loop touches it.
type configWatch struct {
	path    string
	fns     map[int]ConfigFunc
	content string
	exists  bool
	loaded  bool
	dirty   bool // the last read failed: re-read on reconnection
}

// ConfigPath is the node of key in the default group.
func (r *Registry) ConfigPath(key string) string {
	return joinPath(r.set.Config, DefaultConfigGroup, key)
}

// Watch calls fn with the current content of key when it exists, then on
// every create, change and delete, from the registry's loop. It returns a
// function that stops the watch. When ZooKeeper is unreachable the watch is
// armed once it answers, and no error is returned.
func (r *Registry) Watch(ctx context.Context, key string, fn ConfigFunc) (cancel func(), err error) {
	cancel, err = r.watchData(ctx, r.ConfigPath(key), fn)
	if err != nil {
		return nil, fmt.Errorf("watch config %s: %w", key, err)
	}
	return cancel, nil
}

// watchData is Watch for any node path: the config documents and the
// interface → application mappings.
func (r *Registry) watchData(ctx context.Context, p string, fn ConfigFunc) (cancel func(), err error) {
	var id int
	err = r.do(ctx, func() {
		r.nextID++
		id = r.nextID
		c := r.configs[p]
		if c == nil {
			c = &configWatch{path: p, fns: make(map[int]ConfigFunc)}
			r.configs[p] = c
		}
		c.fns[id] = fn
		if !c.loaded {
			r.readConfig(c) // calls every fn, the new one included
		} else if c.exists {
			fn(c.content, false)
		}
	})
	if err != nil {
		return nil, err
	}
	return func() {
		r.sess.Queue().Push(Task{Run: func() {
			if c := r.configs[p]; c != nil {
				delete(c.fns, id)
				if len(c.fns) == 0 {
					delete(r.configs, p) // the armed watch fires once more, unheard
				}
			}
		}, Done: make(chan struct{})})
	}, nil
}

// readConfig reads c with an exists watch (which also watches the data when
// the node exists) and notifies when the content or existence changed.
func (r *Registry) readConfig(c *configWatch) {
	if err := r.reachable(); err != nil {
		c.dirty = true // read on reconnection
		return
	}
	for attempt := 0; attempt < 3; attempt++ {
		ok, _, _, err := r.conn.ExistsW(c.path)
		var data []byte
		if err == nil && ok {
			data, _, err = r.conn.Get(c.path)
			if errors.Is(err, zk.ErrNoNode) {
				continue // deleted between the two calls; the watch fired too
			}
		}
		if err != nil {
			c.dirty = true
			r.log.Warn("zookeeper: cannot read config, keeping last content", "path", c.path, "err", err)
			return
		}
		content := string(data)
		changed := !c.loaded || ok != c.exists || content != c.content
		first := !c.loaded
		c.content, c.exists, c.loaded, c.dirty = content, ok, true, false
		if !changed || (first && !ok) {
			return
		}
		for _, fn := range c.fns {
			fn(content, !ok)
		}
		return
	}
}

// GetConfig returns the content of key; ok is false when it does not exist.
func (r *Registry) GetConfig(ctx context.Context, key string) (content string, ok bool, err error) {
	if err := r.ready(ctx); err != nil {
		return "", false, err
	}
	data, _, err := r.conn.Get(r.ConfigPath(key))
	if errors.Is(err, zk.ErrNoNode) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("get config %s: %w", key, classify(err))
	}
	return string(data), true, nil
}

// PublishConfig creates or replaces the persistent node of key.
func (r *Registry) PublishConfig(ctx context.Context, key, content string) error {
	if err := r.putPersistent(ctx, r.ConfigPath(key), []byte(content)); err != nil {
		return fmt.Errorf("publish config %s: %w", key, err)
	}
	return nil
}

// DeleteConfig removes key; a missing key is not an error.
func (r *Registry) DeleteConfig(ctx context.Context, key string) error {
	if err := r.ready(ctx); err != nil {
		return err
	}
	if err := r.conn.Delete(r.ConfigPath(key), -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("delete config %s: %w", key, classify(err))
	}
	return nil
}

func parentOf(p string) string {
	for i := len(p) - 1; i > 0; i-- {
		if p[i] == '/' {
			return p[:i]
		}
	}
	return "/"
}

package provider

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// ServiceState is one exported service as the QoS port shows it.
type ServiceState struct {
	Key string // [group/]interface[:version]
	// Published: its URLs, one per protocol, are in the registry (or,
	// without a registry, would be). False while offline or while an
	// override rule disables one.
	Published bool
	// Offline: withdrawn by the QoS offline command.
	Offline bool
	// DelayedUntil, when set, is when a service whose settings say delay
	// will be exported; until then it is neither served nor registered.
	DelayedUntil time.Time
}

// Services lists the exported services, sorted by key.
func (p *Provider) Services() []ServiceState {
	p.regMu.Lock()
	defer p.regMu.Unlock()
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make([]ServiceState, 0, len(p.exporters))
	for k, e := range p.exporters {
		if p.delayed[k] == nil {
			out = append(out, ServiceState{Key: k, Published: len(e.publishedURLs()) == len(e.eps), Offline: p.offline[k]})
		}
	}
	for k, d := range p.delayed {
		out = append(out, ServiceState{Key: k, Offline: p.offline[k], DelayedUntil: d.at})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Offline withdraws the exported services whose key matches from the
// registry, as Java's QoS offline does: consumers stop choosing this
// provider, calls in flight and calls still arriving are served. It says
// whether any service matched. A service a plugin exports again while
// offline stays offline.
func (p *Provider) Offline(ctx context.Context, match func(key string) bool) (bool, error) {
	return p.setOffline(ctx, match, true)
}

// Online publishes the matching services again.
func (p *Provider) Online(ctx context.Context, match func(key string) bool) (bool, error) {
	return p.setOffline(ctx, match, false)
}

func (p *Provider) setOffline(ctx context.Context, match func(key string) bool, offline bool) (bool, error) {
	p.regMu.Lock()
	defer p.regMu.Unlock()
	p.mu.RLock()
	var keys []string
	for k := range p.exporters {
		if match(k) {
			keys = append(keys, k)
		}
	}
	p.mu.RUnlock()
	if len(keys) == 0 {
		return false, nil
	}
	for _, k := range keys {
		if offline {
			p.offline[k] = true
		} else {
			delete(p.offline, k)
		}
	}
	if err := p.reconcile(ctx); err != nil {
		verb := "online"
		if offline {
			verb = "offline"
		}
		return true, fmt.Errorf("%s %v: %w", verb, keys, err)
	}
	return true, nil
}

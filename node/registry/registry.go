// Package registry is how Dubbo nodes find each other: providers register
// their URLs, consumers subscribe to the providers, routers and configurators
// of the services they call.
//
// The contract, which every implementation keeps (the ZooKeeper one in
// sub-package zookeeper, the in-memory [Memory] for tests):
//
//   - A subscriber's [Listener] receives, for every category it subscribed to,
//     the FULL current list of matching URLs on every change; an empty list
//     means "none" (no providers, no routes). It never receives deltas.
//   - The first notification of each category arrives before Subscribe
//     returns, either from the registry or, when the registry cannot be
//     reached, from the local cache (Notification.Stale is then true).
//   - When the registry becomes unreachable nothing is notified: the last
//     lists stay valid (stale but usable) until the registry answers again.
//   - Notifications of one registry are delivered one at a time, in order,
//     from one goroutine; a listener must return quickly.
//   - Registrations and subscriptions survive reconnects and session loss:
//     the implementation re-creates them.
//
// The registry's other services that the roles use when an implementation
// has them ([ConfigCenter], [MetadataReport], [ServiceDiscovery],
// [InstanceRegistry]) are defined here too, once for the provider and the
// consumer.
package registry

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/dubbo-lab/dubbo/node/url"
)

// Categories of URLs kept in the registry (PROTOCOLS.md C.2).
const (
	CategoryProviders     = "providers"
	CategoryConsumers     = "consumers"
	CategoryRouters       = "routers"
	CategoryConfigurators = "configurators"
)

// DefaultSubscribeCategories is what a consumer subscribes to when its URL
// has no category parameter, as Java Dubbo does.
var DefaultSubscribeCategories = []string{CategoryProviders, CategoryConfigurators, CategoryRouters}

// ErrUnavailable is the category of errors caused by a registry that cannot
// be reached; the operation is retried when it comes back.
var ErrUnavailable = errors.New("registry unavailable")

// Registry is what the provider and consumer roles need from a registry.
type Registry interface {
	// Register publishes u (a provider or consumer URL) until Unregister or
	// Close. If the registry is unreachable the error wraps ErrUnavailable
	// and the registration is retried on reconnection.
	Register(ctx context.Context, u *url.URL) error
	// Unregister removes a URL published by Register.
	Unregister(ctx context.Context, u *url.URL) error
	// Subscribe delivers the categories named by consumer's "category"
	// parameter (default DefaultSubscribeCategories) of the services that
	// match consumer (interface, group, version; see Match) to l.
	Subscribe(ctx context.Context, consumer *url.URL, l Listener) error
	// Unsubscribe stops every subscription made with an equal consumer URL.
	Unsubscribe(ctx context.Context, consumer *url.URL) error
	// Close unregisters everything and releases the connection.
	Close() error
}

// Notification is the full current list of one category of one subscription.
type Notification struct {
	// Consumer is the URL the subscription was made with.
	Consumer *url.URL
	// Category is providers, routers or configurators.
	Category string
	// URLs are all matching URLs, sorted by their string form; empty = none.
	URLs []*url.URL
	// Stale is true when the list comes from the local cache because the
	// registry could not be reached.
	Stale bool
}

// Listener receives notifications. See the package comment for the rules.
type Listener interface {
	Notify(n Notification)
}

// ListenerFunc adapts a function to Listener.
type ListenerFunc func(n Notification)

// Notify calls f.
func (f ListenerFunc) Notify(n Notification) { f(n) }

// SubscribedCategories lists the categories a consumer URL asks for.
func SubscribedCategories(consumer *url.URL) []string {
	c := consumer.Param(url.KeyCategory)
	if c == "" {
		return slices.Clone(DefaultSubscribeCategories)
	}
	var out []string
	for _, part := range strings.Split(c, ",") {
		if part = strings.TrimSpace(part); part != "" && !slices.Contains(out, part) {
			out = append(out, part)
		}
	}
	return out
}

// Category is the category a URL is filed under: its "category" parameter,
// providers when absent (Java's default).
func Category(u *url.URL) string {
	return u.ParamOr(url.KeyCategory, CategoryProviders)
}

// Interface is the service interface of u: the interface parameter, else the path.
func Interface(u *url.URL) string {
	return u.ParamOr(url.KeyInterface, u.Path())
}

// Match reports whether a registry URL (provider, route, override) applies
// to a consumer's subscription, with Java's UrlUtils.isMatch rules: the
// URL's category is among the consumer's, and MatchService.
func Match(consumer, u *url.URL) bool {
	cats := SubscribedCategories(consumer)
	if !slices.Contains(cats, Category(u)) && !slices.Contains(cats, "*") {
		return false
	}
	return MatchService(consumer, u)
}

// MatchService is Match without the category test, for URLs whose category
// is known from where they were found: interfaces equal (or either is "*");
// not enabled=false unless the consumer asks for enabled=*; consumer group
// "*", equal, or listing the URL's group among comma-separated groups;
// consumer version "*" or equal; classifier "*", absent or equal.
func MatchService(consumer, u *url.URL) bool {
	ci, pi := Interface(consumer), Interface(u)
	if ci != "*" && pi != "*" && ci != pi {
		return false
	}
	if !u.BoolParam("enabled", true) && consumer.Param("enabled") != "*" {
		return false
	}
	cg, pg := consumer.Param(url.KeyGroup), u.Param(url.KeyGroup)
	if cg != "*" && cg != pg && !(pg != "" && slices.Contains(strings.Split(cg, ","), pg)) {
		return false
	}
	if cv := consumer.Param(url.KeyVersion); cv != "*" && cv != u.Param(url.KeyVersion) {
		return false
	}
	cc := consumer.ParamOr("classifier", "*")
	return cc == "*" || cc == u.ParamOr("classifier", "*")
}

// SortURLs sorts urls by their string form, so notifications are stable.
// Each URL is printed once, not once per comparison.
func SortURLs(urls []*url.URL) {
	type keyed struct {
		s string
		u *url.URL
	}
	ks := make([]keyed, len(urls))
	for i, u := range urls {
		ks[i] = keyed{u.String(), u}
	}
	slices.SortFunc(ks, func(a, b keyed) int { return strings.Compare(a.s, b.s) })
	for i, k := range ks {
		urls[i] = k.u
	}
}

// SameURLs reports whether two sorted lists hold equal URLs.
func SameURLs(a, b []*url.URL) bool {
	return slices.EqualFunc(a, b, func(x, y *url.URL) bool { return x == y || x.Equal(y) })
}

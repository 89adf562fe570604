// Package cluster is the consumer side of a call between "the providers of a
// service" and "one provider's invoker": the step Dubbo calls the cluster.
//
// A call flows through four small extension points, each defined here and
// implemented in a sub-package:
//
//   - a [Directory] (package directory) lists the live providers of one
//     service for an invocation, after its [Router]s (package router:
//     condition, tag and affinity rules) have filtered them and override
//     rules (package configurator) have rewritten their URLs;
//   - a [LoadBalancer] (package loadbalance: random, roundrobin, leastactive,
//     shortestresponse, consistenthash, p2c) picks one of them;
//   - a strategy (this package, one file each: failover, failfast, failsafe,
//     failback, forking, broadcast, available) decides what to do when that
//     call fails.
//
// Around the cluster invoker, package mock answers calls by Dubbo's mock
// setting (force:return, fail:return, throw), as Java's
// MockClusterInvoker wraps its cluster. Package match holds the value
// matchers (StringMatch, AddressMatch ...) that tag rules and override
// items share.
//
// [Join] ties a Directory and the load balancers into one [Invoker], which is
// an rpc.Invoker the consumer calls. The Invoker counts calls per provider
// and method in a [Stats] that the leastactive, shortestresponse and p2c
// balancers read.
//
// Each kind of extension has one read-only table from the name users write
// to its constructor, which drives the list of names, the constructor and
// the start-time check of configured names: [Names] and [Check] here for
// strategies, loadbalance.Names and loadbalance.Check, router.Names and
// router.Enabled. How to add a load balancer: write one file in package
// loadbalance with a type whose Select implements [LoadBalancer] and a
// constructor taking the package's env (randomness, clock, Stats), and add
// one row, name -> constructor, to loadbalance's table; the name is then
// accepted in "loadbalance" everywhere (config, URLs, override rules) and
// listed in errors. A strategy is the same: one file with a func of type
// strategy and one row in [strategies].
//
// Call settings (retries, forks, loadbalance, timeout, weight, sticky,
// hash.arguments ...) are read from the provider URLs the directory hands
// out, which already carry the consumer's settings and the override rules,
// with Dubbo's method-level keys ("sayHello.retries") taking precedence over
// the plain ones ("retries"). A generic call ($invoke) reads the settings of
// the method it invokes ([MethodName]). Settings of the whole reference
// (failback's retries and failbacktasks, broadcast.fail.percent) come from
// the consumer URL (Options.URL), as Java's cluster invokers read them
// from theirs. The timeout bounds each attempt, and a caller's "timeout"
// attachment overrides the URL's ([AttemptTimeout]); so failover over n
// providers that all time out fails after (retries + 1) × timeout, unless
// the caller's context ends first.
package cluster

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// ProviderInvoker calls one provider of a service.
type ProviderInvoker interface {
	rpc.Invoker
	// URL is the provider URL this invoker stands for: host, port and
	// parameters such as weight, timestamp, warmup, dubbo.tag, application.
	// Callers must not modify it.
	URL() *url.URL
	// Available reports whether the provider can take calls now; a provider
	// whose connection closed must report false at once.
	Available() bool
}

// Directory lists the providers that may serve an invocation: live, enabled
// and left over by the routing rules. The slice belongs to the caller.
type Directory interface {
	List(inv *rpc.Invocation) []ProviderInvoker
}

// Router filters providers for one invocation of a consumer. It returns a
// subset of invokers (possibly invokers itself) and never modifies it.
type Router interface {
	Route(invokers []ProviderInvoker, consumer *url.URL, inv *rpc.Invocation) []ProviderInvoker
}

// LoadBalancer picks one provider out of a non-empty list.
type LoadBalancer interface {
	Select(invokers []ProviderInvoker, inv *rpc.Invocation) ProviderInvoker
}

// ErrUnknownName is returned for a cluster or loadbalance name Dubbo does not
// define; the error text lists the names that exist.
var ErrUnknownName = errors.New("unknown name")

// Dubbo's URL keys and defaults for the call settings read here.
const (
	KeyRetries     = "retries"
	KeyForks       = "forks"
	KeyTimeout     = "timeout"
	KeyLoadBalance = "loadbalance"
	KeyCluster     = "cluster"
	KeyWeight      = "weight"
	KeyWarmup      = "warmup"
	KeySticky      = "sticky"
	// KeyFailbackTasks bounds the failed calls failback keeps for retrying.
	KeyFailbackTasks = "failbacktasks"
	// KeyBroadcastFailPercent is the share of providers (0-100) whose
	// failure stops a broadcast early; 100 calls them all.
	KeyBroadcastFailPercent = "broadcast.fail.percent"

	DefaultRetries     = 2
	DefaultForks       = 2
	DefaultTimeoutMs   = 1000
	DefaultLoadBalance = "random"
	DefaultCluster     = "failover"
	DefaultWeight      = 100
	DefaultWarmupMs    = 10 * 60 * 1000
	// DefaultFailbackRetries and DefaultFailbackTasks are Java's
	// DEFAULT_FAILBACK_TIMES and DEFAULT_FAILBACK_TASKS.
	DefaultFailbackRetries = 3
	DefaultFailbackTasks   = 100
)

// MethodName is the method whose settings apply to inv: for a generic call
// ($invoke, $invokeAsync) the method it invokes, as Java's
// RpcUtils.getMethodName reads it; else inv.Method.
func MethodName(inv *rpc.Invocation) string {
	if (inv.Method == protocol.MethodInvoke || inv.Method == protocol.MethodInvokeAsync) && len(inv.Args) > 0 {
		if m, ok := inv.Args[0].(string); ok && m != "" {
			return m
		}
	}
	return inv.Method
}

// MethodArgs are the arguments of the method inv calls: for a generic call
// the third argument of $invoke, as Java's RpcUtils.getArguments; else
// inv.Args.
func MethodArgs(inv *rpc.Invocation) []any {
	if (inv.Method == protocol.MethodInvoke || inv.Method == protocol.MethodInvokeAsync) && len(inv.Args) == 3 {
		switch args := inv.Args[2].(type) {
		case []any:
			return args
		case nil:
			return nil
		}
		// Another slice type ([]hessian.Object, []string ...).
		if v := reflect.ValueOf(inv.Args[2]); v.Kind() == reflect.Slice {
			out := make([]any, v.Len())
			for i := range out {
				out[i] = v.Index(i).Interface()
			}
			return out
		}
	}
	return inv.Args
}

// MethodParam returns the value of key for method: "<method>.<key>" when
// set, else "<key>", else "".
func MethodParam(u *url.URL, method, key string) string {
	if method != "" {
		if v := u.Param(method + "." + key); v != "" {
			return v
		}
	}
	return u.Param(key)
}

// MethodIntParam is MethodParam as an integer, def when absent or not a number.
func MethodIntParam(u *url.URL, method, key string, def int) int {
	if n, err := strconv.Atoi(strings.TrimSpace(MethodParam(u, method, key))); err == nil {
		return n
	}
	return def
}

// Names lists the cluster strategies Join accepts, as Dubbo users type them
// in "cluster", sorted.
func Names() []string {
	names := make([]string, 0, len(strategies))
	for n := range strategies {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Check returns nil when name is a cluster strategy ("" is the default,
// failover), else an error wrapping ErrUnknownName that lists the known
// names.
func Check(name string) error {
	if _, ok := strategies[name]; ok || name == "" {
		return nil
	}
	return &UnknownNameError{Kind: "cluster", Name: name, Known: Names()}
}

package provider

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/dubbo-lab/dubbo/node/provider/settings"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Dubbo's executes: the most calls of one method of a service the
// provider runs at once, as Java's ExecuteLimitFilter counts them (RpcStatus
// per service URL and method). The limit is the URL's "<method>.executes",
// else "executes", and follows the override rules with the URL consumers
// see; 0 or absent is no limit, and then nothing is counted.

// executesRefusal is in the message of every call refused for its
// executes, as in Java's.
const executesRefusal = "The service using threads greater than <dubbo:service executes="

// executeLimits are the executes of one service URL.
type executeLimits struct {
	all      int            // executes
	byMethod map[string]int // <method>.executes
	url      string         // the URL, for the refusal's message
}

// setLimits reads the executes of u (nil: a disabled service keeps its
// last limits; it is still served).
func (ep *endpoint) setLimits(u *url.URL) {
	if u == nil {
		return
	}
	l := &executeLimits{url: u.String()}
	for k, v := range u.Params() {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			continue
		}
		if k == settings.KeyExecutes {
			l.all = n
		} else if m, ok := strings.CutSuffix(k, "."+settings.KeyExecutes); ok {
			if l.byMethod == nil {
				l.byMethod = map[string]int{}
			}
			l.byMethod[m] = n
		}
	}
	ep.limits.Store(l)
}

// beginExecute counts one call of method that came in on ep against the
// executes of ep's URL: ok false, with the refusal's message, when that
// many already run (on every protocol); else end must be called when the
// call is over.
func (e *exporter) beginExecute(ep *endpoint, method string) (end func(), refusal string, ok bool) {
	l := ep.limits.Load()
	if l == nil {
		return func() {}, "", true
	}
	max, set := l.byMethod[method]
	if !set {
		max = l.all
	}
	running := e.running[method]
	if max <= 0 || running == nil {
		return func() {}, "", true
	}
	for {
		n := running.Load()
		if int(n) >= max {
			// Java's ExecuteLimitFilter throws this RpcException
			// (LIMIT_EXCEEDED); the exchange layer answers SERVICE_ERROR
			// with the exception's class and message.
			return nil, fmt.Sprintf("org.apache.dubbo.rpc.RpcException: Failed to invoke method %s in provider %s, "+
				"cause: "+executesRefusal+"\"%d\" /> limited.", method, l.url, max), false
		}
		if running.CompareAndSwap(n, n+1) {
			break
		}
	}
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			running.Add(-1)
		}
	}, "", true
}

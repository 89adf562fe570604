package cluster

import (
	"strconv"
	"time"
)

// Weight is a provider's load-balancing weight for method at time now, as
// Dubbo's AbstractLoadBalance.getWeight: the "weight" parameter (default
// 100), scaled down while the provider warms up so that a freshly started
// JVM-like process is not flooded: weight * uptime / warmup, at least 1,
// where uptime comes from the URL's "timestamp" (ms since epoch) and warmup
// from "warmup" (ms, default 10 minutes). A weight of 0 or less gives 0.
func Weight(p ProviderInvoker, method string, now time.Time) int {
	u := p.URL()
	weight := MethodIntParam(u, method, KeyWeight, DefaultWeight)
	if weight <= 0 {
		return 0
	}
	ts, err := strconv.ParseInt(u.Param("timestamp"), 10, 64)
	if err != nil || ts <= 0 {
		return weight
	}
	uptime := now.UnixMilli() - ts
	if uptime < 0 {
		return 1 // clock skew between hosts: treat as just started
	}
	warmup := int64(u.IntParam(KeyWarmup, DefaultWarmupMs))
	if uptime > 0 && uptime < warmup {
		w := int(float64(uptime) / (float64(warmup) / float64(weight)))
		return max(1, min(w, weight))
	}
	return weight
}

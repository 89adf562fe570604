// Package settings is Dubbo's per-service settings (Java's ServiceConfig:
// weight, tag, timeout, retries, loadbalance, warmup, token, executes,
// actives, delay, parameters) and the provider URL parameters they stand
// for. The provider's [[provider.services]] tables and the plugin SDK's
// sdk.Service share it; it imports nothing of the runtime, so plugins stay
// small.
package settings

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Provider URL parameters the settings write, by Java's names
// (AbstractServiceConfig's getters; the tag is written as dubbo.tag).
const (
	KeyWeight      = "weight"
	KeyTag         = "dubbo.tag"
	KeyTimeout     = "timeout"
	KeyRetries     = "retries"
	KeyLoadBalance = "loadbalance"
	KeyWarmup      = "warmup"
	KeyToken       = "token"
	KeyExecutes    = "executes"
	KeyActives     = "actives"
	KeyDelay       = "delay"
)

// Settings are Dubbo's settings of one service. The provider writes them
// into the service's URL as Java's ServiceConfig does, so consumers read
// them there, and enforces executes, delay and token itself. The zero
// value of each field leaves it unset; the settings whose 0 means
// something else than unset (weight, retries, warmup) are pointers, so
// that 0 is written as Java writes it.
type Settings struct {
	// Weight is the load-balancing weight (weight); 0 gives the provider
	// no calls while others have weight. Default: the node's
	// provider.weight, else 100.
	Weight *int `koanf:"weight"`
	// Tag is the static tag consumers route by (dubbo.tag). Default none.
	Tag string `koanf:"tag"`
	// Timeout is the consumers' timeout of each attempt, unless they set
	// their own (timeout, in ms). Default: the consumer's, else 1s.
	Timeout time.Duration `koanf:"timeout"`
	// Retries are the consumers' failover retries, unless they set their
	// own (retries). A pointer so that 0 can be said. Default 2.
	Retries *int `koanf:"retries"`
	// LoadBalance is the consumers' load balancer, unless they set their
	// own (loadbalance). Default random.
	LoadBalance string `koanf:"loadbalance"`
	// Warmup is how long after export consumers ramp this provider's
	// weight up (warmup, in ms); 0 is no warm-up. Default 10m.
	Warmup *time.Duration `koanf:"warmup"`
	// Token makes callers present a token (token): "true" or "default" a
	// random one, "false" none, anything else that value. Default: the
	// node's provider.token.
	Token string `koanf:"token"`
	// Executes is the most calls of one method the provider runs at once
	// (executes); one more is refused as Java's ExecuteLimitFilter refuses
	// it. Default 0: unlimited.
	Executes int `koanf:"executes"`
	// Actives is the most calls of one method each consumer may have in
	// flight (actives), for the consumers to enforce. Default 0: unlimited.
	Actives int `koanf:"actives"`
	// Delay postpones the export, serving and registering, by this long
	// after the service comes up (delay, in ms), as Java's export delay.
	// Default 0: at once.
	Delay time.Duration `koanf:"delay"`
	// Parameters are any other Dubbo URL parameters, written as given
	// ("sayHello.timeout" = "3000", "onconnect" = "connected"); the fields
	// above win over them. Default none.
	Parameters map[string]string `koanf:"parameters"`
}

// Params are the URL parameters the settings stand for: Parameters, then
// the fields over them. Durations are written in milliseconds, as Java
// writes them.
func (s Settings) Params() map[string]string {
	p := maps.Clone(s.Parameters)
	if p == nil {
		p = map[string]string{}
	}
	for k, n := range map[string]int{KeyExecutes: s.Executes, KeyActives: s.Actives} {
		if n != 0 {
			p[k] = strconv.Itoa(n)
		}
	}
	for k, d := range map[string]time.Duration{KeyTimeout: s.Timeout, KeyDelay: s.Delay} {
		if d != 0 {
			p[k] = strconv.FormatInt(d.Milliseconds(), 10)
		}
	}
	for k, n := range map[string]*int{KeyWeight: s.Weight, KeyRetries: s.Retries} {
		if n != nil {
			p[k] = strconv.Itoa(*n)
		}
	}
	if s.Warmup != nil {
		p[KeyWarmup] = strconv.FormatInt(s.Warmup.Milliseconds(), 10)
	}
	for k, v := range map[string]string{KeyTag: s.Tag, KeyLoadBalance: s.LoadBalance, KeyToken: s.Token} {
		if v != "" {
			p[k] = v
		}
	}
	return p
}

// Check reports the first setting that cannot be written or means
// nothing (CheckParams on what Params gives), naming it by its URL
// parameter.
func (s Settings) Check() error { return CheckParams(s.Params()) }

// Reserved are the parameters the provider writes from the service
// itself; no setting may change them.
var Reserved = []string{"anyhost", "application", "dubbo", "generic", "group", "interface",
	"methods", "pid", "release", "side", "timestamp", "version"}

// integers are the settings whose values are non-negative integers
// (milliseconds for timeout, warmup and delay), plain or per method
// ("sayHello.timeout").
var integers = []string{KeyWeight, KeyTimeout, KeyRetries, KeyWarmup, KeyExecutes, KeyActives, KeyDelay}

// CheckParams reports the first URL parameter that cannot be written or
// means nothing: a reserved or malformed key, a value that would break the
// URL, a negative or non-integer number. Load balancer names are left to
// the node, which knows them.
func CheckParams(params map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if err := checkParam(k, params[k]); err != nil {
			return err
		}
	}
	return nil
}

func checkParam(k, v string) error {
	switch {
	case k == "" || strings.ContainsAny(k, "&=?#/ \t\r\n"):
		return fmt.Errorf("parameter %q: not a URL parameter name", k)
	case strings.ContainsAny(v, "&\r\n"):
		return fmt.Errorf("parameter %s: value %q would break the URL ('&' or a line break)", k, v)
	case slices.Contains(Reserved, k):
		return fmt.Errorf("parameter %s: written by the provider from the service itself; it cannot be set", k)
	}
	if slices.Contains(integers, Base(k)) {
		if n, err := strconv.Atoi(v); err != nil || n < 0 {
			return fmt.Errorf("parameter %s: %q is not a non-negative integer", k, v)
		}
	}
	return nil
}

// Base is the setting a parameter sets: "timeout" for "sayHello.timeout",
// and dubbo.tag for itself.
func Base(k string) string {
	if k == KeyTag {
		return k
	}
	return k[strings.LastIndexByte(k, '.')+1:]
}

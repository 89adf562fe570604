package rules

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dubbo-lab/dubbo/node/cluster/configurator"
	"github.com/dubbo-lab/dubbo/node/cluster/loadbalance"
	"github.com/dubbo-lab/dubbo/node/cluster/mock"
)

// The console's forms each edit one part of a rule document, and keep the
// rest of it as it was (items of other forms, items with a match, fields
// this package does not model). Each form has a Read function, which
// reads its part of a document (nil: no document yet), and an Apply
// function, which writes the part into the document stored under key and
// checks the result with Normalize. When the document is left with
// nothing in it, Apply returns empty and the caller deletes it, as Admin
// does.
//
// Forms of override documents (<key>.configurators; key a service key or
// an application):
//
//   - weights: Admin's "type: weight" items, side provider;
//   - load balancing: Admin's "type: balancing" items, side consumer;
//   - timeout and retries, and mock: items of their own, side consumer,
//     for every consumer (addresses 0.0.0.0), setting "<key>" (every
//     method) or "<method>.<key>", as Dubbo's documentation writes them.

// TypeBalancing is Admin's item type for its load balancing page.
const TypeBalancing = "balancing"

// anyHost in an item's addresses is every instance.
const anyHost = "0.0.0.0"

// Weight is one weight item: the providers at Addresses (host or
// host:port; none: every provider of the key) get Weight.
type Weight struct {
	Weight    int      `json:"weight"`
	Addresses []string `json:"addresses"`
}

// ReadWeights lists the weight items of an override document.
func ReadWeights(doc []byte) ([]Weight, error) {
	d, err := loadOverride(doc, "")
	if err != nil {
		return nil, err
	}
	var out []Weight
	for _, it := range d.Configs {
		if it.Type != TypeWeight {
			continue
		}
		w, _ := strconv.Atoi(fmt.Sprint(it.Parameters["weight"]))
		out = append(out, Weight{Weight: w, Addresses: anyIfAll(it.Addresses)})
	}
	return out, nil
}

// ApplyWeights replaces the weight items of an override document with ws,
// written as Admin's weight page writes them.
func ApplyWeights(doc []byte, key string, ws []Weight) (out []byte, empty bool, err error) {
	items := make([]configurator.Item, 0, len(ws))
	for i, w := range ws {
		if w.Weight < 0 || w.Weight > MaxWeight {
			return nil, false, fmt.Errorf("%w: weight %d (row %d); use 0 to %d", ErrInvalid, w.Weight, i+1, MaxWeight)
		}
		addrs, err := checkHosts(w.Addresses)
		if err != nil {
			return nil, false, err
		}
		items = append(items, configurator.Item{Type: TypeWeight, Enabled: true, Side: "provider", Addresses: addrs,
			Parameters: map[string]any{"weight": w.Weight}})
	}
	return applyItems(doc, key, func(it configurator.Item) bool { return it.Type == TypeWeight }, items)
}

// Balancing is one load balancing item: Strategy (a load balancer's name)
// for Method ("": every method).
type Balancing struct {
	Method   string `json:"method"`
	Strategy string `json:"strategy"`
}

// ReadBalancing lists the load balancing settings of an override
// document's balancing items.
func ReadBalancing(doc []byte) ([]Balancing, error) {
	d, err := loadOverride(doc, "")
	if err != nil {
		return nil, err
	}
	var out []Balancing
	for _, it := range d.Configs {
		if it.Type != TypeBalancing {
			continue
		}
		for _, k := range sortedKeys(it.Parameters) {
			if m, ok := methodOf(k, "loadbalance"); ok {
				out = append(out, Balancing{Method: m, Strategy: fmt.Sprint(it.Parameters[k])})
			}
		}
	}
	return out, nil
}

// ApplyBalancing replaces the balancing items of an override document
// with one per setting, as Admin's load balancing page writes them.
func ApplyBalancing(doc []byte, key string, bs []Balancing) (out []byte, empty bool, err error) {
	items := make([]configurator.Item, 0, len(bs))
	for _, b := range bs {
		if err := checkMethod(b.Method); err != nil {
			return nil, false, err
		}
		if b.Strategy == "" {
			return nil, false, fmt.Errorf("%w: no load balancer for %s; use one of %s", ErrInvalid, methodName(b.Method), strings.Join(loadbalance.Names(), ", "))
		}
		if err := loadbalance.Check(b.Strategy); err != nil {
			return nil, false, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		items = append(items, configurator.Item{Type: TypeBalancing, Enabled: true, Side: "consumer",
			Parameters: map[string]any{methodKey(b.Method, "loadbalance"): b.Strategy}})
	}
	return applyItems(doc, key, func(it configurator.Item) bool { return it.Type == TypeBalancing }, items)
}

// Timeout is the timeout (milliseconds) and retries of Method ("": every
// method); nil is not set.
type Timeout struct {
	Method  string `json:"method"`
	Timeout *int   `json:"timeout"`
	Retries *int   `json:"retries"`
}

// timeoutKeys are the parameters the timeout form owns.
var timeoutKeys = []string{"timeout", "retries"}

// ReadTimeouts lists the timeout and retries items of an override
// document.
func ReadTimeouts(doc []byte) ([]Timeout, error) {
	d, err := loadOverride(doc, "")
	if err != nil {
		return nil, err
	}
	var out []Timeout
	for _, it := range d.Configs {
		m, ok := methodItem(it, timeoutKeys)
		if !ok {
			continue
		}
		t := Timeout{Method: m}
		if v, ok := it.Parameters[methodKey(m, "timeout")]; ok {
			n, _ := strconv.Atoi(fmt.Sprint(v))
			t.Timeout = &n
		}
		if v, ok := it.Parameters[methodKey(m, "retries")]; ok {
			n, _ := strconv.Atoi(fmt.Sprint(v))
			t.Retries = &n
		}
		out = append(out, t)
	}
	return out, nil
}

// ApplyTimeouts replaces the timeout and retries items of an override
// document with ts, one item each.
func ApplyTimeouts(doc []byte, key string, ts []Timeout) (out []byte, empty bool, err error) {
	items := make([]configurator.Item, 0, len(ts))
	for _, t := range ts {
		if err := checkMethod(t.Method); err != nil {
			return nil, false, err
		}
		params := map[string]any{}
		if t.Timeout != nil {
			if *t.Timeout <= 0 {
				return nil, false, fmt.Errorf("%w: timeout %d ms for %s; give at least 1", ErrInvalid, *t.Timeout, methodName(t.Method))
			}
			params[methodKey(t.Method, "timeout")] = *t.Timeout
		}
		if t.Retries != nil {
			if *t.Retries < 0 {
				return nil, false, fmt.Errorf("%w: retries %d for %s; give 0 or more", ErrInvalid, *t.Retries, methodName(t.Method))
			}
			params[methodKey(t.Method, "retries")] = *t.Retries
		}
		if len(params) == 0 {
			return nil, false, fmt.Errorf("%w: neither timeout nor retries for %s", ErrInvalid, methodName(t.Method))
		}
		items = append(items, consumerItem(params))
	}
	return applyItems(doc, key, func(it configurator.Item) bool { _, ok := methodItem(it, timeoutKeys); return ok }, items)
}

// Mock is Dubbo's mock setting of Method ("": every method): answer with
// Value ("return <Value>") or fail ("throw", Value the exception class or
// ""), at once (Force) or only when the call failed.
type Mock struct {
	Method string `json:"method"`
	Force  bool   `json:"force"`
	Throw  bool   `json:"throw"`
	Value  string `json:"value"`
}

// Setting is the mock parameter's value.
func (m Mock) Setting() string {
	s := "fail:"
	if m.Force {
		s = "force:"
	}
	v := strings.TrimSpace(m.Value)
	if m.Throw {
		return strings.TrimSpace(s + "throw " + v)
	}
	if v == "" {
		v = "null"
	}
	return s + "return " + v
}

var mockKeys = []string{mock.Key}

// ReadMocks lists the mock items of an override document.
func ReadMocks(doc []byte) ([]Mock, error) {
	d, err := loadOverride(doc, "")
	if err != nil {
		return nil, err
	}
	var out []Mock
	for _, it := range d.Configs {
		m, ok := methodItem(it, mockKeys)
		if !ok {
			continue
		}
		setting := fmt.Sprint(it.Parameters[methodKey(m, mock.Key)])
		parsed, err := mock.Parse(setting)
		if err != nil || parsed == nil {
			continue // not a form's: left in the YAML
		}
		v := parsed.Return
		if parsed.Throw {
			v = parsed.Exception
		}
		out = append(out, Mock{Method: m, Force: parsed.Force, Throw: parsed.Throw, Value: v})
	}
	return out, nil
}

// ApplyMocks replaces the mock items of an override document with ms,
// one item each.
func ApplyMocks(doc []byte, key string, ms []Mock) (out []byte, empty bool, err error) {
	items := make([]configurator.Item, 0, len(ms))
	for _, m := range ms {
		if err := checkMethod(m.Method); err != nil {
			return nil, false, err
		}
		if _, err := mock.Parse(m.Setting()); err != nil {
			return nil, false, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		items = append(items, consumerItem(map[string]any{methodKey(m.Method, mock.Key): m.Setting()}))
	}
	owned := func(it configurator.Item) bool {
		m, ok := methodItem(it, mockKeys)
		if !ok {
			return false
		}
		parsed, err := mock.Parse(fmt.Sprint(it.Parameters[methodKey(m, mock.Key)]))
		return err == nil && parsed != nil
	}
	return applyItems(doc, key, owned, items)
}

// consumerItem is an item for every consumer of the key.
func consumerItem(params map[string]any) configurator.Item {
	return configurator.Item{Enabled: true, Side: "consumer", Addresses: []string{anyHost}, Parameters: params}
}

// methodItem reports whether an item is a consumer-side setting of keys
// alone, for every consumer, of one method or every method (method ""),
// which the timeout and mock forms own.
func methodItem(it configurator.Item, keys []string) (method string, ok bool) {
	if (it.Type != "" && it.Type != "general") || it.Side != "consumer" || it.Match != nil || len(it.Extra) > 0 ||
		len(it.ProviderAddresses) > 0 || len(it.Applications) > 0 || len(it.Services) > 0 || len(it.Parameters) == 0 ||
		len(anyIfAll(it.Addresses)) > 0 {
		return "", false
	}
	first := true
	for k := range it.Parameters {
		m, found := "", false
		for _, key := range keys {
			if m, found = methodOf(k, key); found {
				break
			}
		}
		if !found || (!first && m != method) {
			return "", false
		}
		method, first = m, false
	}
	return method, true
}

// methodOf reads "<key>" (method "") or "<method>.<key>".
func methodOf(param, key string) (method string, ok bool) {
	if param == key {
		return "", true
	}
	if m, ok := strings.CutSuffix(param, "."+key); ok && m != "" && !strings.Contains(m, ".") {
		return m, true
	}
	return "", false
}

func methodKey(method, key string) string {
	if method == "" || method == "*" {
		return key
	}
	return method + "." + key
}

func methodName(m string) string {
	if m == "" || m == "*" {
		return "every method"
	}
	return m
}

// checkMethod refuses method names that are not Java identifiers.
func checkMethod(m string) error {
	if m == "" || m == "*" {
		return nil
	}
	for i, r := range m {
		if !(r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || i > 0 && r >= '0' && r <= '9') {
			return fmt.Errorf("%w: method %q is not a Java method name", ErrInvalid, m)
		}
	}
	return nil
}

// anyIfAll drops 0.0.0.0 (every instance) from addresses: none is every
// instance too.
func anyIfAll(addrs []string) []string {
	var out []string
	for _, a := range addrs {
		if a = strings.TrimSpace(a); a != anyHost && a != "*" && a != "" {
			out = append(out, a)
		}
	}
	return out
}

// checkHosts checks a list of hosts or host:port; none is every instance.
func checkHosts(addrs []string) ([]string, error) {
	out := anyIfAll(addrs)
	for _, a := range out {
		if strings.ContainsAny(a, " \t/,") {
			return nil, fmt.Errorf("%w: address %q; want a host or host:port", ErrInvalid, a)
		}
		if strings.Contains(a, ":") && !strings.HasSuffix(a, "]") {
			if err := checkAddress(a); err != nil {
				return nil, err
			}
		}
	}
	if len(out) == 0 {
		return []string{anyHost}, nil
	}
	return out, nil
}

// applyItems replaces the items of an override document that owned
// selects with items, where the first of them was (else at the end), and
// checks the result. Items the form rewrites keep their order.
func applyItems(doc []byte, key string, owned func(configurator.Item) bool, items []configurator.Item) (out []byte, empty bool, err error) {
	if err := CheckKey(KindOverride, key); err != nil {
		return nil, false, err
	}
	d, err := loadOverride(doc, key)
	if err != nil {
		return nil, false, err
	}
	if len(doc) == 0 {
		d.ConfigVersion = "v3.0"
	}
	// The items before the first owned one are all kept: it is where the
	// new ones go.
	at := slices.IndexFunc(d.Configs, owned)
	rest := slices.DeleteFunc(slices.Clone(d.Configs), owned)
	if at < 0 {
		at = len(rest)
	}
	d.Configs = slices.Insert(rest, at, items...)
	if len(d.Configs) == 0 {
		return nil, true, nil
	}
	b, err := marshal(d)
	if err != nil {
		return nil, false, err
	}
	out, err = Normalize(KindOverride, key, b)
	return out, false, err
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

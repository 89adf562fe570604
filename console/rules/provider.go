package rules

import (
	"fmt"
	"net"
	"slices"
	"strconv"
)

// Admin's item types for the items its own pages manage.
const TypeWeight = "weight"

// MaxWeight bounds the weight the console writes (Dubbo has no bound; this
// keeps a slip of the keyboard from starving every other provider).
const MaxWeight = 10000

// checkAddress refuses anything but host:port.
func checkAddress(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return fmt.Errorf("%w: provider address %q; want host:port", ErrInvalid, addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
		return fmt.Errorf("%w: provider address %q: bad port", ErrInvalid, addr)
	}
	return nil
}

// loadOverride reads the service's override document, or starts one as
// Admin's insertConfig does (scope service, keyed by the service id).
func loadOverride(doc []byte, key string) (OverrideRule, error) {
	if len(doc) == 0 {
		return OverrideRule{Key: key, Scope: ScopeOf(key), Enabled: true}, nil
	}
	return ParseOverride(doc)
}

// onlyAddress reports whether an item targets exactly addr.
func onlyAddress(c OverrideConfig, addr string) bool {
	return len(c.Addresses) == 1 && c.Addresses[0] == addr
}

// SetWeight returns the override document of a service (doc, "" for none,
// stored under key) with the provider at addr weighted as Admin's weight
// page writes it: an item of type weight, side provider, for that address.
// An earlier weight item for the same address is replaced.
func SetWeight(doc []byte, key, addr string, weight int) ([]byte, error) {
	if err := checkAddress(addr); err != nil {
		return nil, err
	}
	if weight < 0 || weight > MaxWeight {
		return nil, fmt.Errorf("%w: weight %d; use 0 to %d", ErrInvalid, weight, MaxWeight)
	}
	r, err := loadOverride(doc, key)
	if err != nil {
		return nil, err
	}
	item := OverrideConfig{Type: TypeWeight, Enabled: true, Side: "provider", Addresses: []string{addr},
		Parameters: map[string]any{"weight": weight}}
	i := slices.IndexFunc(r.Configs, func(c OverrideConfig) bool { return c.Type == TypeWeight && onlyAddress(c, addr) })
	if i >= 0 {
		r.Configs[i] = item
	} else {
		r.Configs = append(r.Configs, item)
	}
	out, err := marshal(r)
	if err != nil {
		return nil, err
	}
	return Normalize(KindOverride, key, out)
}

// SetDisabled returns the override document with the provider at addr
// taken out of service (an item side provider, disabled: true, as Dubbo's
// documentation and Admin's dynamic configuration write it) or put back
// (that item removed). empty is true when no item is left: Admin then
// deletes the document, and so should the caller.
func SetDisabled(doc []byte, key, addr string, disabled bool) (out []byte, empty bool, err error) {
	if err := checkAddress(addr); err != nil {
		return nil, false, err
	}
	r, err := loadOverride(doc, key)
	if err != nil {
		return nil, false, err
	}
	r.Configs = slices.DeleteFunc(r.Configs, func(c OverrideConfig) bool { return IsDisableItem(c) && onlyAddress(c, addr) })
	if disabled {
		r.Configs = append(r.Configs, OverrideConfig{Enabled: true, Side: "provider", Addresses: []string{addr},
			Parameters: map[string]any{"disabled": true}})
	}
	if len(r.Configs) == 0 {
		return nil, true, nil
	}
	if out, err = marshal(r); err != nil {
		return nil, false, err
	}
	out, err = Normalize(KindOverride, key, out)
	return out, false, err
}

// IsDisableItem reports whether an item only switches providers off.
func IsDisableItem(c OverrideConfig) bool {
	if len(c.Parameters) != 1 || c.Side == "consumer" {
		return false
	}
	v, ok := c.Parameters["disabled"]
	return ok && fmt.Sprint(v) == "true"
}

// DisabledAddresses lists the provider addresses an override document
// switches off with enabled items.
func DisabledAddresses(doc []byte) []string {
	r, err := ParseOverride(doc)
	if err != nil || !r.Enabled {
		return nil
	}
	var out []string
	for _, c := range r.Configs {
		if c.Enabled && IsDisableItem(c) {
			out = append(out, c.Addresses...)
		}
	}
	return out
}

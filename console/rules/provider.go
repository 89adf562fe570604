package rules

import (
	"fmt"
	"net"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"

	"github.com/dubbo-lab/dubbo/node/cluster/configurator"
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

// loadOverride reads the service's override document, keeping every field
// (items with a match, fields new Admin adds), or starts one as Admin's
// insertConfig does (scope service, keyed by the service id).
func loadOverride(doc []byte, key string) (*configurator.Document, error) {
	if len(doc) == 0 {
		return &configurator.Document{Key: key, Scope: ScopeOf(key), Enabled: true}, nil
	}
	var d configurator.Document
	if err := yaml.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("%w: override rule: %v", ErrInvalid, err)
	}
	return &d, nil
}

// onlyAddress reports whether an item targets exactly addr, whoever it
// matches otherwise.
func onlyAddress(c configurator.Item, addr string) bool {
	return len(c.Addresses) == 1 && c.Addresses[0] == addr && c.Match == nil
}

// SetWeight returns the override document of a service (doc, "" for none,
// stored under key) with the provider at addr weighted as Admin's weight
// page writes it: an item of type weight, side provider, for that address.
// An earlier weight item for the same address is replaced; the rest of
// the document is kept as it was.
func SetWeight(doc []byte, key, addr string, weight int) ([]byte, error) {
	if err := checkAddress(addr); err != nil {
		return nil, err
	}
	if weight < 0 || weight > MaxWeight {
		return nil, fmt.Errorf("%w: weight %d; use 0 to %d", ErrInvalid, weight, MaxWeight)
	}
	d, err := loadOverride(doc, key)
	if err != nil {
		return nil, err
	}
	item := configurator.Item{Type: TypeWeight, Enabled: true, Side: "provider", Addresses: []string{addr},
		Parameters: map[string]any{"weight": weight}}
	i := slices.IndexFunc(d.Configs, func(c configurator.Item) bool { return c.Type == TypeWeight && onlyAddress(c, addr) })
	if i >= 0 {
		d.Configs[i] = item
	} else {
		d.Configs = append(d.Configs, item)
	}
	out, err := marshal(d)
	if err != nil {
		return nil, err
	}
	return Normalize(KindOverride, key, out)
}

// SetDisabled returns the override document with the provider at addr
// taken out of service (an item side provider, disabled: true, as Dubbo's
// documentation and Admin's dynamic configuration write it) or put back
// (that item removed), the rest kept as it was. empty is true when no
// item is left: Admin then deletes the document, and so should the caller.
func SetDisabled(doc []byte, key, addr string, disabled bool) (out []byte, empty bool, err error) {
	if err := checkAddress(addr); err != nil {
		return nil, false, err
	}
	d, err := loadOverride(doc, key)
	if err != nil {
		return nil, false, err
	}
	d.Configs = slices.DeleteFunc(d.Configs, func(c configurator.Item) bool { return IsDisableItem(c) && onlyAddress(c, addr) })
	if disabled {
		d.Configs = append(d.Configs, configurator.Item{Enabled: true, Side: "provider", Addresses: []string{addr},
			Parameters: map[string]any{"disabled": true}})
	}
	if len(d.Configs) == 0 {
		return nil, true, nil
	}
	if out, err = marshal(d); err != nil {
		return nil, false, err
	}
	out, err = Normalize(KindOverride, key, out)
	return out, false, err
}

// IsDisableItem reports whether an item only switches providers off.
func IsDisableItem(c configurator.Item) bool {
	if len(c.Parameters) != 1 || c.Side == "consumer" {
		return false
	}
	v, ok := c.Parameters["disabled"]
	return ok && fmt.Sprint(v) == "true"
}

// DisabledAddresses lists the provider addresses an override document
// switches off with enabled items.
func DisabledAddresses(doc []byte) []string {
	var d configurator.Document
	if yaml.Unmarshal(doc, &d) != nil || !d.Enabled {
		return nil
	}
	var out []string
	for _, c := range d.Configs {
		if c.Enabled && c.Match == nil && IsDisableItem(c) {
			out = append(out, c.Addresses...)
		}
	}
	return out
}

package jsoncall

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Settings are the settings given for one call, over the config's (the
// command line's flags); nil is not given. Reference lays them over the
// reference as they are: the caller checked the values.
type Settings struct {
	// Version and Group pick the config's reference among those to the
	// interface, and are the keys of a new one.
	Version, Group *string
	// URL is a provider to call directly (dubbo://host:port), bypassing
	// the registry.
	URL *string
	// Registry says to call through the registry even when the config's
	// reference has a url.
	Registry bool

	Timeout     *time.Duration
	Retries     *int
	LoadBalance *string
	Cluster     *string
	Connections *int
}

// Reference is the reference a call of method on iface goes through: the
// entry of refs for iface (the one with the version and group given, when
// given; the only one otherwise), else a new one with the version and
// group given; with the settings given over it and over method's own, as
// the config's method settings are over their reference's. Its check is
// off: a call reports a missing provider itself. It fails when refs has
// several entries for iface and the settings do not say which; refs is not
// changed.
func Reference(refs []consumer.ReferenceConfig, iface, method string, s Settings) (consumer.ReferenceConfig, error) {
	version, group := deref(s.Version), deref(s.Group)
	var matches []consumer.ReferenceConfig
	for _, r := range refs {
		if r.Interface == iface && (s.Version == nil || r.Version == version) && (s.Group == nil || r.Group == group) {
			matches = append(matches, r)
		}
	}
	rc := consumer.ReferenceConfig{Interface: iface, Version: version, Group: group}
	switch {
	case len(matches) == 1:
		rc = matches[0]
	case len(matches) > 1:
		exact := slices.IndexFunc(matches, func(r consumer.ReferenceConfig) bool { return r.Version == version && r.Group == group })
		if exact < 0 {
			keys := make([]string, len(matches))
			for i, r := range matches {
				keys[i] = url.ServiceKey(r.Interface, r.Version, r.Group)
			}
			return rc, fmt.Errorf("the config has %d references to %s (%s); give the version and group of the one to call",
				len(matches), iface, strings.Join(keys, ", "))
		}
		rc = matches[exact]
	}
	rc.Methods = slices.Clone(rc.Methods)
	check := false
	rc.Check = &check

	switch {
	case s.URL != nil:
		rc.URL = *s.URL
	case s.Registry:
		rc.URL = ""
	}
	// A setting given for the call wins over the method's too.
	overMethod := func(set func(m *consumer.MethodConfig)) {
		for i := range rc.Methods {
			if rc.Methods[i].Name == method {
				set(&rc.Methods[i])
			}
		}
	}
	if s.Timeout != nil {
		rc.Timeout = *s.Timeout
		overMethod(func(m *consumer.MethodConfig) { m.Timeout = 0 })
	}
	if s.Retries != nil {
		retries := *s.Retries
		rc.Retries = &retries
		overMethod(func(m *consumer.MethodConfig) { m.Retries = nil })
	}
	if s.LoadBalance != nil {
		rc.LoadBalance = *s.LoadBalance
		overMethod(func(m *consumer.MethodConfig) { m.LoadBalance = "" })
	}
	if s.Cluster != nil {
		rc.Cluster = *s.Cluster
	}
	if s.Connections != nil {
		rc.Connections = *s.Connections
	}
	return rc, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

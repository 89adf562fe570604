package configurator

import (
	"fmt"

	"github.com/dubbo-lab/dubbo/node/cluster/match"
	"github.com/dubbo-lab/dubbo/node/url"
)

// ConditionMatch is an item's match, Java Dubbo 3.3's ConditionMatch:
// every matcher set must hold for the URL being configured. Address tests
// the host of the side the item is for (the provider's, or the consumer's
// for a consumer-side item), ProviderAddress the provider's host:port,
// Service its service key ("group/interface:version"), App the
// application and Param its parameters (for a consumer-side item, the
// consumer's parameters over the provider's, as Java merges them).
type ConditionMatch struct {
	Address         *match.Address `yaml:"address,omitempty" json:"address,omitempty"`
	ProviderAddress *match.Address `yaml:"providerAddress,omitempty" json:"providerAddress,omitempty"`
	Service         *match.List    `yaml:"service,omitempty" json:"service,omitempty"`
	App             *match.List    `yaml:"app,omitempty" json:"app,omitempty"`
	// Application is how Dubbo Admin's Go successor spells App; App wins.
	Application *match.List    `yaml:"application,omitempty" json:"application,omitempty"`
	Param       match.Params   `yaml:"param,omitempty" json:"param,omitempty"`
	Extra       map[string]any `yaml:",inline" json:"-"`
}

// Compile checks the matchers and prepares their regular expressions.
func (m *ConditionMatch) Compile() error {
	for _, l := range []*match.List{m.Service, m.App, m.Application} {
		if l == nil {
			continue
		}
		if err := l.Compile(); err != nil {
			return err
		}
	}
	if err := m.Param.Compile(); err != nil {
		return fmt.Errorf("param: %w", err)
	}
	return nil
}

func (m *ConditionMatch) app() *match.List {
	if m.App != nil {
		return m.App
	}
	return m.Application
}

// Matches reports whether the URL u, with parameters param, satisfies
// every matcher set. at is the address of the side the item is for: a
// provider's host:port, a consumer's host. Java tests Address on the host
// alone, while its own example writes host:port: either form matches.
func (m *ConditionMatch) Matches(at string, u *url.URL, param func(string) (string, bool)) bool {
	if m.Address != nil && !m.Address.Match(at) {
		if host, _ := match.SplitHostPort(at); host == at || !m.Address.Match(host) {
			return false
		}
	}
	if m.ProviderAddress != nil && !m.ProviderAddress.Match(u.Address()) {
		return false
	}
	if m.Service != nil {
		key := url.ServiceKey(u.ParamOr(url.KeyInterface, u.Path()), u.Param(url.KeyVersion), u.Param(url.KeyGroup))
		if !m.Service.Match(key, true) {
			return false
		}
	}
	if app := m.app(); app != nil {
		v, ok := param("application")
		if !app.Match(v, ok) {
			return false
		}
	}
	return m.Param.Match(param)
}

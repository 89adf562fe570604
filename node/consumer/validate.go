package consumer

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/cluster/loadbalance"
	"github.com/dubbo-lab/dubbo/node/cluster/mock"
	"github.com/dubbo-lab/dubbo/node/cluster/router"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Validate checks what a consumer would otherwise find wrong only when
// calls fail: the names of load balancers, clusters and routers (against
// their tables), the numbers and switches the runtime reads from
// parameters, the direct urls and the migration step. The error names the
// key as a config file spells it, first:
// "consumer.references[1].methods[0].loadbalance: unknown load balancer ...".
func (c Config) Validate() error {
	if _, err := migrationStep(c.Migration); err != nil {
		return fmt.Errorf("consumer.migration: %w", err)
	}
	if err := c.Defaults.validate("consumer.defaults"); err != nil {
		return err
	}
	for i, rc := range c.References {
		if err := rc.validate(fmt.Sprintf("consumer.references[%d]", i)); err != nil {
			return err
		}
	}
	return nil
}

// validate checks one reference whose key is key.
func (rc ReferenceConfig) validate(key string) error {
	if rc.Interface == "" {
		return fmt.Errorf("%s.interface: a reference needs the Java interface it calls, e.g. org.example.Greeter", key)
	}
	if rc.Protocol != "" && !callableProtocol(rc.Protocol, rc.Protocol) {
		return fmt.Errorf("%s.protocol: %q: use %s, or leave it out for any", key, rc.Protocol, strings.Join(Protocols(), " or "))
	}
	if rc.URL != "" {
		dus, err := directURLs(rc.URL)
		if err != nil {
			return fmt.Errorf("%s.url: %w", key, err)
		}
		for _, du := range dus {
			if !rc.callable(du) {
				return fmt.Errorf("%s.url: %s is not of the reference's protocol %s", key, du.Address(), rc.Protocol)
			}
		}
	}
	if err := rc.Settings.validate(key); err != nil {
		return err
	}
	for j, m := range rc.Methods {
		mkey := fmt.Sprintf("%s.methods[%d]", key, j)
		if m.Name == "" {
			return fmt.Errorf("%s.name: a method setting needs the method's name", mkey)
		}
		if err := loadbalance.Check(m.LoadBalance); err != nil {
			return fmt.Errorf("%s.loadbalance: %w", mkey, err)
		}
		if err := validateParameters(mkey+".parameters", m.Parameters); err != nil {
			return err
		}
	}
	return nil
}

func (s Settings) validate(key string) error {
	if err := loadbalance.Check(s.LoadBalance); err != nil {
		return fmt.Errorf("%s.loadbalance: %w", key, err)
	}
	if err := cluster.Check(s.Cluster); err != nil {
		return fmt.Errorf("%s.cluster: %w", key, err)
	}
	if s.Connections < 0 {
		return fmt.Errorf("%s.connections: %d is negative", key, s.Connections)
	}
	return validateParameters(key+".parameters", s.Parameters)
}

// paramChecks check the parameters the runtime reads, as it reads them.
var paramChecks = map[string]func(string) error{
	cluster.KeyLoadBalance:          loadbalance.Check,
	cluster.KeyCluster:              cluster.Check,
	keyRouter:                       func(v string) error { _, err := router.Enabled(v); return err },
	cluster.KeyRetries:              wholeNumber,
	cluster.KeyForks:                wholeNumber,
	cluster.KeyTimeout:              wholeNumber,
	cluster.KeyFailbackTasks:        wholeNumber,
	"connections":                   wholeNumber,
	"hash.nodes":                    wholeNumber,
	"hash.arguments":                argumentIndexes,
	cluster.KeySticky:               boolean,
	cluster.KeyBroadcastFailPercent: percent,
	mock.Key:                        mock.Check,
}

// keyRouter is Dubbo's "router" key: the routers to run ("-tag" turns one off).
const keyRouter = "router"

func validateParameters(key string, params map[string]string) error {
	for k, v := range params {
		if k == "" {
			return fmt.Errorf("%s: an empty key", key)
		}
		check := paramChecks[k]
		if _, setting, ok := strings.Cut(k, "."); ok && setting == mock.Key {
			check = mock.Check // a method's, "<method>.mock"
		}
		if check != nil {
			if err := check(v); err != nil {
				return fmt.Errorf("%s.%s: %w", key, k, err)
			}
		}
	}
	return nil
}

func wholeNumber(v string) error {
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err != nil || n < 0 {
		return fmt.Errorf("%q is not a whole number", v)
	}
	return nil
}

func percent(v string) error {
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err != nil || n < 0 || n > 100 {
		return fmt.Errorf("%q is not a percentage from 0 to 100", v)
	}
	return nil
}

func boolean(v string) error {
	if _, err := strconv.ParseBool(strings.TrimSpace(v)); err != nil {
		return fmt.Errorf("%q is not true or false", v)
	}
	return nil
}

// argumentIndexes checks hash.arguments: argument positions, "0,1".
func argumentIndexes(v string) error {
	for _, s := range strings.Split(v, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err != nil || n < 0 {
			return fmt.Errorf("%q is not a list of argument positions such as 0 or 0,1", v)
		}
	}
	return nil
}

// directURLs parses a reference's url: one dubbo://host:port or
// tri://host:port, or several separated by ";", as Java's ReferenceConfig
// splits it.
func directURLs(s string) ([]*url.URL, error) {
	var out []*url.URL
	for _, part := range strings.Split(s, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		u, err := CheckDirectURL(part)
		if err != nil {
			return nil, fmt.Errorf("%w (several separated by ;)", err)
		}
		out = append(out, u)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%q names no dubbo://host:port or tri://host:port", s)
	}
	return out, nil
}

// CheckDirectURL parses one provider address given directly:
// dubbo://host:port or tri://host:port.
func CheckDirectURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		err = fmt.Errorf("%w; want dubbo://host:port or tri://host:port", err)
	case !callableProtocol("", u.Protocol()) || u.Port() == 0:
		err = fmt.Errorf("%q: want dubbo://host:port or tri://host:port", s)
	}
	return u, err
}

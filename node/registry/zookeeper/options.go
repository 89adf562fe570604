package zookeeper

import (
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	dubbourl "github.com/dubbo-lab/dubbo/node/url"
)

// DefaultSessionTimeout is Java Dubbo's session timeout (Curator client,
// URL parameter "session"). The server clamps it to [2, 20] × tickTime.
const DefaultSessionTimeout = 60 * time.Second

// Options are the parts of a registry that do not travel in its URL.
type Options struct {
	// CacheFile is where the last provider/router/configurator lists are
	// kept for start-ups without a reachable registry. Default "": no file.
	CacheFile string
	// Logger receives the registry's log lines. Default slog.Default().
	Logger *slog.Logger
	// Dialer opens connections to ZooKeeper; tests wrap it to cut the link.
	// Default net.DialTimeout.
	Dialer zk.Dialer
	// ConnectTimeout is how long the first Subscribe waits for the first
	// session before it falls back to the cache file. Default 5s.
	ConnectTimeout time.Duration
}

// DefaultConnectTimeout is Options.ConnectTimeout's default.
const DefaultConnectTimeout = 5 * time.Second

// Layout is where a registry keeps what in ZooKeeper (PROTOCOLS.md
// C.2–C.5), as its URL says.
type Layout struct {
	// Root holds a folder per interface: "/" + the group parameter,
	// /dubbo by default ("/" when the group is "/").
	Root string
	// Services holds a folder per application: the rootPath parameter,
	// else the root when a group is given, else /services.
	Services string
	// Config is the config center: "/" + the namespace parameter +
	// "/config", /dubbo/config by default. Rule documents are in its
	// DefaultConfigGroup folder.
	Config string
	// Mapping holds the interface → applications mapping: /dubbo/mapping.
	Mapping string
}

// settings is what the registry URL says, parsed once.
type settings struct {
	servers        []string // host:port, every host of the URL and of "backup"
	user, password string   // digest auth when user != ""
	sessionTimeout time.Duration
	Layout
}

func parseSettings(u *dubbourl.URL) (settings, error) {
	s := settings{
		servers:  u.Addresses(2181),
		user:     u.Username(),
		password: u.Password(),
	}
	if len(s.servers) == 0 || s.servers[0] == "" {
		return s, fmt.Errorf("zookeeper registry %s: no host (want zookeeper://host:port[,host:port...])", u.Redacted())
	}
	// Java: root = "/" + group, default group "dubbo".
	s.Root = u.ParamOr(dubbourl.KeyGroup, "dubbo")
	if !strings.HasPrefix(s.Root, "/") {
		s.Root = "/" + s.Root
	}
	if len(s.Root) > 1 {
		s.Root = strings.TrimSuffix(s.Root, "/")
	}
	// Java's CuratorFrameworkUtils.getRootPath: rootPath, else "/" + group,
	// else /services.
	switch {
	case u.Param("rootPath") != "" && u.Param("rootPath") != "/services":
		s.Services = u.Param("rootPath")
	case u.Param(dubbourl.KeyGroup) != "":
		s.Services = s.Root
	default:
		s.Services = "/services"
	}
	if !strings.HasPrefix(s.Services, "/") {
		s.Services = "/" + s.Services
	}
	// The config center is independent of the registry group in Java:
	// namespace "dubbo", so /dubbo/config.
	s.Config = "/" + u.ParamOr("namespace", "dubbo") + "/config"
	s.Mapping = "/dubbo/mapping"

	// Java reads "session" (ms); dubbo-go reads "timeout" ("5s" or ms).
	s.sessionTimeout = DefaultSessionTimeout
	for _, key := range []string{"timeout", "session"} {
		if v := u.Param(key); v != "" {
			d, err := parseDuration(v)
			if err != nil {
				return s, fmt.Errorf("zookeeper registry %s: parameter %s=%q: %w", u.Redacted(), key, v, err)
			}
			s.sessionTimeout = d
		}
	}
	return s, nil
}

// parseDuration reads Dubbo's milliseconds ("5000") or a Go duration ("5s").
func parseDuration(v string) (time.Duration, error) {
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n <= 0 {
			return 0, fmt.Errorf("must be positive")
		}
		return time.Duration(n) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("want milliseconds or a duration like 10s")
	}
	if d <= 0 {
		return 0, fmt.Errorf("must be positive")
	}
	return d, nil
}

// acl is what every node we create carries: creator-all when we
// authenticated (Java Dubbo's CREATOR_ALL_ACL), open otherwise.
func (s settings) acl() []zk.ACL {
	if s.user != "" {
		return zk.AuthACL(zk.PermAll)
	}
	return zk.WorldACL(zk.PermAll)
}

// joinPath appends escaped-or-plain elements to a root that may be "/".
func joinPath(root string, elems ...string) string {
	p := strings.TrimSuffix(root, "/")
	for _, e := range elems {
		p += "/" + e
	}
	return p
}

// interfacePath is root/<URL-encoded interface>, as Java's toServicePath.
func (s settings) interfacePath(iface string) string {
	return joinPath(s.Root, url.QueryEscape(iface))
}

func (s settings) categoryPath(iface, category string) string {
	return joinPath(s.interfacePath(iface), category)
}

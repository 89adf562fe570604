// Package metadata is the data model of Dubbo 3 application-level service
// discovery (PROTOCOLS.md C.5), independent of any registry:
//
//   - [Info] is the MetadataInfo a provider serves through
//     org.apache.dubbo.metadata.MetadataService#getMetadataInfo(revision):
//     its application, revision and exported services. [NewInfo] builds it
//     from the provider URLs and computes the revision as Java does.
//   - [Instance] is the Curator ServiceInstance JSON stored at
//     /services/<app>/<ip:port>, with the Dubbo metadata keys that lead a
//     consumer to the endpoints and to the MetadataService.
//   - [ServiceDefinition] is the 2.7-style report of one interface's methods
//     and types, stored under /dubbo/metadata/<interface>/..., which lets a
//     generic caller find the parameter types of a method.
//
// Everything here marshals with encoding/json to the field names Java's
// Jackson/fastjson2 use, and unmarshals what Java and dubbo-go write.
package metadata

import (
	"crypto/md5"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"

	"github.com/dubbo-lab/dubbo/node/url"
)

// EmptyRevision is the revision of an application that exports nothing.
const EmptyRevision = "0"

// Info is Java's MetadataInfo.
type Info struct {
	App      string                  `json:"app"`
	Revision string                  `json:"revision"`
	Services map[string]*ServiceInfo `json:"services"`
}

// ServiceInfo is one exported service of an Info, keyed by its MatchKey.
type ServiceInfo struct {
	Name     string            `json:"name"`
	Group    string            `json:"group,omitempty"`
	Version  string            `json:"version,omitempty"`
	Protocol string            `json:"protocol"`
	Port     int               `json:"port"`
	Path     string            `json:"path"`
	Params   map[string]string `json:"params"`
}

// excludedServiceParams are the URL parameters Java's
// DefaultMetadataParamsFilter leaves out of a ServiceInfo, because they
// change per process and would change the revision.
var excludedServiceParams = []string{
	"monitor", "bind.ip", "bind.port", "qos.enable", "qos.host", "qos.port",
	"qos.accept.foreign.ip", "validation", "interfaces", "pid", "timestamp",
	"heartbeat.timeout", "ipv6",
}

// NewServiceInfo describes one exported provider URL.
func NewServiceInfo(u *url.URL) *ServiceInfo {
	params := make(map[string]string)
	for k, v := range u.Params() {
		if !excludedParam(k) {
			params[k] = v
		}
	}
	return &ServiceInfo{
		Name:     u.ParamOr(url.KeyInterface, u.Path()),
		Group:    u.Param(url.KeyGroup),
		Version:  u.Param(url.KeyVersion),
		Protocol: u.Protocol(),
		Port:     u.Port(),
		Path:     u.Path(),
		Params:   params,
	}
}

func excludedParam(k string) bool {
	for _, x := range excludedServiceParams {
		if strings.EqualFold(k, x) || strings.Contains(k, "."+x) {
			return true
		}
	}
	return false
}

// ServiceKey is Java's [group/]interface[:version] (BaseServiceMetadata.buildServiceKey).
// Unlike url.ServiceKey it keeps a version "0.0.0": the revision hashes
// it, and must come out as Java's does.
func (s *ServiceInfo) ServiceKey() string {
	k := s.Name
	if s.Group != "" {
		k = s.Group + "/" + k
	}
	if s.Version != "" {
		k += ":" + s.Version
	}
	return k
}

// MatchKey is ServiceKey plus ":protocol", the key of Info.Services.
func (s *ServiceInfo) MatchKey() string {
	if s.Protocol == "" {
		return s.ServiceKey()
	}
	return s.ServiceKey() + ":" + s.Protocol
}

// descString is Java's ServiceInfo.toDescString:
// matchKey + port + path + TreeMap(params).toString().
func (s *ServiceInfo) descString() string {
	var b strings.Builder
	b.WriteString(s.MatchKey())
	b.WriteString(strconv.Itoa(s.Port))
	b.WriteString(s.Path)
	keys := make([]string, 0, len(s.Params))
	for k := range s.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys) // TreeMap order: String.compareTo, which is UTF-16; equal to byte order for ASCII keys
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(s.Params[k])
	}
	b.WriteByte('}')
	return b.String()
}

// NewInfo builds the MetadataInfo of app from its exported provider URLs
// and computes its revision.
func NewInfo(app string, exported []*url.URL) *Info {
	info := &Info{App: app, Services: make(map[string]*ServiceInfo, len(exported))}
	for _, u := range exported {
		s := NewServiceInfo(u)
		info.Services[s.MatchKey()] = s
	}
	info.Revision = info.CalcRevision()
	return info
}

// CalcRevision is Java's MetadataInfo.calAndGetRevision: the lower-case hex
// MD5 of the app name followed by every service's desc string in match-key
// order; EmptyRevision when nothing is exported.
func (m *Info) CalcRevision() string {
	if len(m.Services) == 0 {
		return EmptyRevision
	}
	keys := make([]string, 0, len(m.Services))
	for k := range m.Services {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(m.App)
	for _, k := range keys {
		b.WriteString(m.Services[k].descString())
	}
	sum := md5.Sum([]byte(b.String()))
	return hex.EncodeToString(sum[:])
}

// Serves reports whether s is the service iface of group and version, as a
// reference asks for it, its version compared as the provider routes it
// (url.NormalVersion).
func (s *ServiceInfo) Serves(iface, group, version string) bool {
	return s.Name == iface && s.Group == group && url.NormalVersion(s.Version) == url.NormalVersion(version)
}

// ProviderURL rebuilds the provider URL of s served at host:port by app
// (Java's InstanceAddressURL): the ServiceInfo's params, with interface,
// version and group from its keys, since dubbo-go keeps only a few params.
func (s *ServiceInfo) ProviderURL(app, host string, port int) *url.URL {
	params := make(map[string]string, len(s.Params)+4)
	for k, v := range s.Params {
		params[k] = v
	}
	params[url.KeyInterface] = s.Name
	delete(params, url.KeyVersion)
	delete(params, url.KeyGroup)
	if s.Version != "" {
		params[url.KeyVersion] = s.Version
	}
	if s.Group != "" {
		params[url.KeyGroup] = s.Group
	}
	if params["application"] == "" && app != "" {
		params["application"] = app
	}
	protocol := s.Protocol
	if protocol == "" {
		protocol = "dubbo"
	}
	path := s.Path
	if path == "" {
		path = s.Name
	}
	return url.New(protocol, host, port, path, params)
}

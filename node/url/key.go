package url

import "strings"

// Dubbo names a service by its interface, version and group, and writes
// that name two ways. Every function here takes the three in that order,
// the order Dubbo users write them (interface:version:group).
//
//   - The service key [group/]interface[:version] is what a provider files
//     its exporter under and routes requests by, and what callers and
//     logs name a service with. The versions Java providers treat as none
//     ("", "0.0.0", "*") are left out, so all of them name one service.
//   - The colon-separated key interface:version:group is the config-center
//     rule key; it keeps both colons and every version as written.

// ServiceKey is the service key of u: its path (falling back to the
// interface parameter), version and group. See the package's ServiceKey.
func (u *URL) ServiceKey() string {
	path := u.path
	if path == "" {
		path = u.Param(KeyInterface)
	}
	return ServiceKey(path, u.Param(KeyVersion), u.Param(KeyGroup))
}

// ServiceKey is [group/]iface[:version], with the versions that mean none
// left out (see NormalVersion).
func ServiceKey(iface, version, group string) string {
	version = NormalVersion(version)
	var b strings.Builder
	b.Grow(len(group) + len(iface) + len(version) + 2)
	if group != "" {
		b.WriteString(group)
		b.WriteByte('/')
	}
	b.WriteString(iface)
	if version != "" {
		b.WriteByte(':')
		b.WriteString(version)
	}
	return b.String()
}

// NormalVersion maps the versions Java providers treat as none ("0.0.0",
// "*") to "", so that versions compare as the provider routes them.
func NormalVersion(v string) string {
	if v == "0.0.0" || v == "*" {
		return ""
	}
	return v
}

// ParseServiceKey splits a service key [group/]iface[:version]; the
// colon-separated form iface:version:group is read too (a group before
// the '/' wins), as Dubbo's ConfigParser reads rule keys. Versions are
// returned as written.
func ParseServiceKey(key string) (iface, version, group string) {
	if g, rest, ok := strings.Cut(key, "/"); ok {
		group, key = g, rest
	}
	iface, rest, ok := strings.Cut(key, ":")
	if !ok {
		return iface, "", group
	}
	version, g, ok := strings.Cut(rest, ":")
	if ok && group == "" {
		group = g
	}
	return iface, version, group
}

// ColonSeparatedKey is the config-center rule key of u:
// interface:version:group with both colons kept even when a part is
// empty, and a version "0.0.0" kept, as Java's getColonSeparatedKey
// (dubbo-go differs on 0.0.0). The interface is the interface parameter,
// falling back to the path.
func (u *URL) ColonSeparatedKey() string {
	return ColonSeparatedKey(u.ParamOr(KeyInterface, u.path), u.Param(KeyVersion), u.Param(KeyGroup))
}

// ColonSeparatedKey builds iface:version:group. See URL.ColonSeparatedKey.
func ColonSeparatedKey(iface, version, group string) string {
	return iface + ":" + version + ":" + group
}

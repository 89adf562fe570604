package url

import "strings"

// ServiceKey is the key a provider files its exporter under and routes
// requests by: [group/]path[:version], with the versions "", "0.0.0" and "*"
// omitted because Java providers treat them alike. The path falls back to the
// interface parameter.
func (u *URL) ServiceKey() string {
	path := u.path
	if path == "" {
		path = u.Param(KeyInterface)
	}
	return ServiceKey(path, u.Param(KeyGroup), u.Param(KeyVersion))
}

// ServiceKey builds the exporter key from a request's path and its group and
// version attachments. See URL.ServiceKey.
func ServiceKey(path, group, version string) string {
	var b strings.Builder
	b.Grow(len(group) + len(path) + len(version) + 2)
	if group != "" {
		b.WriteString(group)
		b.WriteByte('/')
	}
	b.WriteString(path)
	if version != "" && version != "0.0.0" && version != "*" {
		b.WriteByte(':')
		b.WriteString(version)
	}
	return b.String()
}

// ColonSeparatedKey is the config-center rule key interface:version:group
// with both colons kept even when a part is empty, and a version "0.0.0"
// kept, as Java's getColonSeparatedKey (dubbo-go differs on 0.0.0). The
// interface is the interface parameter, falling back to the path.
func (u *URL) ColonSeparatedKey() string {
	return ColonSeparatedKey(u.ParamOr(KeyInterface, u.path), u.Param(KeyVersion), u.Param(KeyGroup))
}

// ColonSeparatedKey builds interface:version:group. See URL.ColonSeparatedKey.
func ColonSeparatedKey(iface, version, group string) string {
	return iface + ":" + version + ":" + group
}

package url

import (
	"fmt"
	neturl "net/url"
)

// Encode returns the URL as a ZooKeeper node name: the full string
// query-escaped once, as dubbo-go writes it (space becomes '+', '*' becomes
// %2A). Java writes '*' raw and escapes '~'; Decode accepts both.
func (u *URL) Encode() string {
	return neturl.QueryEscape(u.String())
}

// Decode parses a ZooKeeper node name written by Encode, Java Dubbo or dubbo-go.
func Decode(name string) (*URL, error) {
	s, err := neturl.QueryUnescape(name)
	if err != nil {
		return nil, fmt.Errorf("%w: node name %q: %w", ErrInvalid, name, err)
	}
	return Parse(s)
}

// ParamUnescaped returns the value of key with one level of query escaping
// removed, for values that are themselves escaped inside the URL (the "rule"
// of a condition route). It falls back to the raw value if it is not valid
// escaping.
func (u *URL) ParamUnescaped(key string) string {
	v := u.params[key]
	if d, err := neturl.QueryUnescape(v); err == nil {
		return d
	}
	return v
}

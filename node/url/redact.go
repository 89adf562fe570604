package url

import (
	"slices"
	"strings"
)

// Hidden stands in for every secret Redacted hides.
const Hidden = "***"

// secretWords make a parameter a secret when its key contains one, in any
// case: a provider's token, a registry's or a monitor's password, a
// secret or access key.
var secretWords = [...]string{"token", "password", "passwd", "secret", "credential", "access-key", "accesskey"}

// SecretWords lists the words that make a key secret (see IsSecret), for
// redactors of text that is not a parsed URL.
func SecretWords() []string { return slices.Clone(secretWords[:]) }

// IsSecret reports whether a parameter (or JSON) key names a secret: it
// contains, in any case, one of SecretWords.
func IsSecret(key string) bool {
	key = strings.ToLower(key)
	for _, w := range secretWords {
		if strings.Contains(key, w) {
			return true
		}
	}
	return false
}

// Redacted is String with the password and the values of secret
// parameters (IsSecret) replaced by Hidden; the user name stays, as it
// tells which credentials were used. Use it for every URL that goes into
// a log line, an error or a page.
func (u *URL) Redacted() string {
	c := *u
	if c.password != "" {
		c.password = Hidden
	}
	copied := false // u's parameters are copied only when one is secret
	for k, v := range u.params {
		if v != "" && IsSecret(k) {
			if !copied {
				c.params, copied = u.Params(), true
			}
			c.params[k] = Hidden
		}
	}
	return c.String()
}

// redactRaw hides the secrets of a string Parse refused, for its errors:
// the password before '@' and the values of secret parameters.
func redactRaw(s string) string {
	rest, query, hasQuery := strings.Cut(s, "?")
	start := 0
	if i := strings.Index(rest, "://"); i >= 0 {
		start = i + 3
	}
	auth := rest[start:]
	if i := strings.IndexByte(auth, '/'); i >= 0 {
		auth = auth[:i]
	}
	if at := strings.LastIndexByte(auth, '@'); at >= 0 {
		if c := strings.IndexByte(auth[:at], ':'); c >= 0 {
			rest = rest[:start+c+1] + Hidden + rest[start+at:]
		}
	}
	if !hasQuery {
		return rest
	}
	parts := strings.Split(query, "&")
	for i, p := range parts {
		if k, v, ok := strings.Cut(p, "="); ok && v != "" && IsSecret(k) {
			parts[i] = k + "=" + Hidden
		}
	}
	return rest + "?" + strings.Join(parts, "&")
}

// Redact is Redacted for a URL written as a string, which need not parse:
// for an address as configured, in a log line or an error.
func Redact(s string) string {
	if u, err := Parse(s); err == nil {
		return u.Redacted()
	}
	return redactRaw(s)
}

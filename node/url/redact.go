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

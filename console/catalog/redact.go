package catalog

import (
	"encoding/json"
	neturl "net/url"
	"regexp"
	"strings"

	"github.com/dubbo-lab/dubbo/node/url"
)

// Hidden replaces every secret the console shows.
const Hidden = "***"

// secretKey reports whether a parameter or JSON key names a secret: a
// provider's token, a password, a secret or access key.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, s := range []string{"token", "password", "secret", "passwd", "credential", "access-key", "accesskey"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return false
}

// RedactParams returns params with secret values hidden.
func RedactParams(params map[string]string) map[string]string {
	if params == nil {
		return nil
	}
	out := make(map[string]string, len(params))
	for k, v := range params {
		if secretKey(k) && v != "" {
			v = Hidden
		}
		out[k] = v
	}
	return out
}

// RedactURL renders u with its password and secret parameters hidden.
func RedactURL(u *url.URL) string {
	c := u.Clone()
	for k, v := range c.Params() {
		if secretKey(k) && v != "" {
			c.SetParam(k, Hidden)
		}
	}
	s := c.String()
	if p := u.Password(); p != "" {
		s = strings.Replace(s, ":"+p+"@", ":"+Hidden+"@", 1)
	}
	return s
}

// userinfo matches user:password@ after a scheme.
var userinfo = regexp.MustCompile(`(://[^/@:\s]*:)[^/@\s]*@`)

// secretParam matches key=value of a secret parameter in a query string.
var secretParam = regexp.MustCompile(`(?i)((?:^|[?&;\s"])[a-z0-9._-]*(?:token|password|passwd|secret|credential|access-?key)[a-z0-9._-]*=)[^&\s"]*`)

// RedactText hides secrets in any node data: JSON is walked and secret
// keys' values hidden; URLs anywhere (including inside JSON strings) lose
// their passwords and secret parameters.
func RedactText(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) == nil {
		if b, err := json.MarshalIndent(redactJSON(v), "", "  "); err == nil {
			return string(b)
		}
	}
	return redactString(s)
}

func redactString(s string) string {
	s = userinfo.ReplaceAllString(s, "${1}"+Hidden+"@")
	s = secretParam.ReplaceAllString(s, "${1}"+Hidden)
	// URL-encoded forms (node names): key%3Dvalue.
	if strings.Contains(s, "%3D") || strings.Contains(s, "%3d") {
		if d, err := neturl.QueryUnescape(s); err == nil && d != s {
			if r := redactString(d); r != d {
				return r
			}
		}
	}
	return s
}

func redactJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if secretKey(k) {
				if s, ok := e.(string); !ok || s != "" {
					t[k] = Hidden
				}
				continue
			}
			t[k] = redactJSON(e)
		}
		return t
	case []any:
		for i, e := range t {
			t[i] = redactJSON(e)
		}
		return t
	case string:
		return redactString(t)
	}
	return v
}

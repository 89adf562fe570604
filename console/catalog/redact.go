package catalog

import (
	"encoding/json"
	neturl "net/url"
	"regexp"
	"strings"

	"github.com/dubbo-lab/dubbo/node/url"
)

// RedactParams returns params with secret values (url.IsSecret) hidden.
func RedactParams(params map[string]string) map[string]string {
	if params == nil {
		return nil
	}
	out := make(map[string]string, len(params))
	for k, v := range params {
		if url.IsSecret(k) && v != "" {
			v = url.Hidden
		}
		out[k] = v
	}
	return out
}

// userinfo matches user:password@ after a scheme.
var userinfo = regexp.MustCompile(`(://[^/@:\s]*:)[^/@\s]*@`)

// secretParam matches key=value of a secret parameter (url.IsSecret) in a
// query string.
var secretParam = regexp.MustCompile(`(?i)((?:^|[?&;\s"])[a-z0-9._-]*(?:` + alternatives(url.SecretWords()) + `)[a-z0-9._-]*=)[^&\s"]*`)

func alternatives(words []string) string {
	for i, w := range words {
		words[i] = regexp.QuoteMeta(w)
	}
	return strings.Join(words, "|")
}

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
	s = userinfo.ReplaceAllString(s, "${1}"+url.Hidden+"@")
	s = secretParam.ReplaceAllString(s, "${1}"+url.Hidden)
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
			if url.IsSecret(k) {
				if s, ok := e.(string); !ok || s != "" {
					t[k] = url.Hidden
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

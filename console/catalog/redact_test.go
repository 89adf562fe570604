package catalog

import (
	"net/url"
	"strings"
	"testing"

	dubbourl "github.com/dubbo-lab/dubbo/node/url"
)

func TestRedact(t *testing.T) {
	secrets := []string{"tok-1", "pw-2", "hunter2", "sk-3"}
	for _, in := range []string{
		"dubbo://1.2.3.4:1/a?token=tok-1&password=pw-2&x=y",
		"zookeeper://admin:hunter2@10.0.0.1:2181",
		`{"url":"dubbo://1.2.3.4:1/a?token=tok-1","secretKey":"sk-3","nested":{"password":"pw-2"}}`,
		url.QueryEscape("dubbo://1.2.3.4:1/a?token=tok-1&access-key=sk-3"),
	} {
		out := RedactText(in)
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("RedactText(%q) = %q shows %s", in, out, s)
			}
		}
	}
	if p := RedactParams(map[string]string{"token": "tok-1", "timeout": "5"}); p["token"] != dubbourl.Hidden || p["timeout"] != "5" {
		t.Errorf("RedactParams = %v", p)
	}
}

func FuzzRedactText(f *testing.F) {
	f.Add("dubbo://1.2.3.4:1/a?token=tok-1")
	f.Add(`{"password":"x","a":[1,"zookeeper://a:b@c"]}`)
	f.Fuzz(func(t *testing.T, s string) {
		out := RedactText(s)
		if strings.Contains(s, "token=SECRETVALUE") && strings.Contains(out, "SECRETVALUE") {
			t.Fatalf("secret shown: %q", out)
		}
	})
}

func TestCheckPath(t *testing.T) {
	for _, ok := range []string{"/", "/dubbo", "/dubbo/a%3A/b"} {
		if err := checkPath(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "dubbo", "/dubbo/", "//", "/a//b", "/a/./b", "/a/..", "/a\x00b"} {
		if err := checkPath(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

package url

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

const (
	javaProvider     = "dubbo://192.168.1.10:20880/org.apache.dubbo.demo.DemoService?anyhost=true&application=demo-provider&deprecated=false&dubbo=2.0.2&dynamic=true&generic=false&interface=org.apache.dubbo.demo.DemoService&methods=sayHello,sayHelloAsync&pid=12345&release=3.3.0&service-name-mapping=true&side=provider&timestamp=1700000000000"
	javaProviderNode = "dubbo%3A%2F%2F192.168.1.10%3A20880%2Forg.apache.dubbo.demo.DemoService%3Fanyhost%3Dtrue%26application%3Ddemo-provider%26deprecated%3Dfalse%26dubbo%3D2.0.2%26dynamic%3Dtrue%26generic%3Dfalse%26interface%3Dorg.apache.dubbo.demo.DemoService%26methods%3DsayHello%2CsayHelloAsync%26pid%3D12345%26release%3D3.3.0%26service-name-mapping%3Dtrue%26side%3Dprovider%26timestamp%3D1700000000000"
	javaConsumer     = "consumer://192.168.1.20/org.apache.dubbo.demo.DemoService?application=demo-consumer&category=consumers&check=false&dubbo=2.0.2&interface=org.apache.dubbo.demo.DemoService&methods=sayHello,sayHelloAsync&pid=23456&release=3.3.0&side=consumer&timestamp=1700000000100"
	// PROTOCOLS.md C.8, with <ip> and the timestamp filled in.
	greeterProvider = "dubbo://10.0.0.7:20881/Greeter?application=prov-app&deprecated=false&dubbo=2.0.2&dynamic=true&generic=false&interface=Greeter&methods=hi&prefer.serialization=hessian2,fastjson2&release=3.3.6&revision=1.0&service-name-mapping=true&side=provider&timestamp=1700000000000&version=1.0"
)

func TestParseParts(t *testing.T) {
	tests := []struct {
		in                       string
		protocol, user, password string
		host                     string
		port                     int
		address                  string
		path                     string
		params                   map[string]string
	}{
		{in: javaProvider, protocol: "dubbo", host: "192.168.1.10", port: 20880, address: "192.168.1.10:20880",
			path: "org.apache.dubbo.demo.DemoService", params: map[string]string{
				"anyhost": "true", "application": "demo-provider", "deprecated": "false", "dubbo": "2.0.2",
				"dynamic": "true", "generic": "false", "interface": "org.apache.dubbo.demo.DemoService",
				"methods": "sayHello,sayHelloAsync", "pid": "12345", "release": "3.3.0",
				"service-name-mapping": "true", "side": "provider", "timestamp": "1700000000000"}},
		{in: javaConsumer, protocol: "consumer", host: "192.168.1.20", address: "192.168.1.20",
			path: "org.apache.dubbo.demo.DemoService", params: map[string]string{
				"application": "demo-consumer", "category": "consumers", "check": "false", "dubbo": "2.0.2",
				"interface": "org.apache.dubbo.demo.DemoService", "methods": "sayHello,sayHelloAsync",
				"pid": "23456", "release": "3.3.0", "side": "consumer", "timestamp": "1700000000100"}},
		{in: "zookeeper://127.0.0.1:2181", protocol: "zookeeper", host: "127.0.0.1", port: 2181, address: "127.0.0.1:2181"},
		{in: "zookeeper://[::1]:2181/org.apache.dubbo.registry.RegistryService?timeout=5000", protocol: "zookeeper",
			host: "::1", port: 2181, address: "[::1]:2181", path: "org.apache.dubbo.registry.RegistryService",
			params: map[string]string{"timeout": "5000"}},
		{in: "dubbo://admin:s3:cr3t@h:1", protocol: "dubbo", user: "admin", password: "s3:cr3t", host: "h", port: 1, address: "h:1"},
		{in: "override://0.0.0.0/org.example.Greeter?category=configurators&dynamic=false&enabled=true&timeout=6000",
			protocol: "override", host: "0.0.0.0", address: "0.0.0.0", path: "org.example.Greeter",
			params: map[string]string{"category": "configurators", "dynamic": "false", "enabled": "true", "timeout": "6000"}},
		// Java: a bare key maps to itself, blanks around parts are trimmed, empty keys dropped.
		{in: "dubbo://h:1/p?anyhost& a=b=c &=x", protocol: "dubbo", host: "h", port: 1, address: "h:1", path: "p",
			params: map[string]string{"anyhost": "anyhost", "a": "b=c"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			u, err := Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			got := []any{u.Protocol(), u.Username(), u.Password(), u.Host(), u.Port(), u.Address(), u.Path()}
			want := []any{tt.protocol, tt.user, tt.password, tt.host, tt.port, tt.address, tt.path}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("parts = %v, want %v", got, want)
			}
			if tt.params == nil {
				tt.params = map[string]string{}
			}
			if !reflect.DeepEqual(u.Params(), tt.params) {
				t.Errorf("params = %v, want %v", u.Params(), tt.params)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{
		"", "127.0.0.1:2181", "://h:1", "dubbo://h:port", "dubbo://h:", "dubbo://h:70000",
		"dubbo://[::1", "dubbo://[::1]x", "zookeeper://a:1,,b:2", "dubbo://h:-1",
	} {
		if u, err := Parse(in); !errors.Is(err, ErrInvalid) {
			t.Errorf("Parse(%q) = %v, %v; want ErrInvalid", in, u, err)
		}
	}
}

func TestStringIsJavaFullString(t *testing.T) {
	tests := []struct{ in, want string }{
		{javaProvider, javaProvider},
		{javaConsumer, javaConsumer},
		{greeterProvider, greeterProvider},
		{"dubbo://h:1/p?b=2&a=1&c=", "dubbo://h:1/p?a=1&b=2&c="},
		{"zookeeper://a:2181,b:2181,[::1]:2181", "zookeeper://a:2181,b:2181,[::1]:2181"},
		{"dubbo://u@h", "dubbo://u@h"},
		{"condition://0.0.0.0/org.example.Greeter?rule=host+%3D+10.20.153.10+%3D%3E+host+%3D+10.20.153.11&category=routers",
			"condition://0.0.0.0/org.example.Greeter?category=routers&rule=host+%3D+10.20.153.10+%3D%3E+host+%3D+10.20.153.11"},
	}
	for _, tt := range tests {
		if got := MustParse(tt.in).String(); got != tt.want {
			t.Errorf("String(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestNodeNames(t *testing.T) {
	tests := []struct{ name, url string }{
		{javaProviderNode, javaProvider},
		{"dubbo%3A%2F%2F10.0.0.7%3A20881%2FGreeter%3Fapplication%3Dprov-app%26deprecated%3Dfalse%26dubbo%3D2.0.2%26dynamic%3Dtrue%26generic%3Dfalse%26interface%3DGreeter%26methods%3Dhi%26prefer.serialization%3Dhessian2%2Cfastjson2%26release%3D3.3.6%26revision%3D1.0%26service-name-mapping%3Dtrue%26side%3Dprovider%26timestamp%3D1700000000000%26version%3D1.0", greeterProvider},
	}
	for _, tt := range tests {
		u, err := Decode(tt.name)
		if err != nil {
			t.Fatal(err)
		}
		if u.String() != tt.url {
			t.Errorf("Decode = %q, want %q", u.String(), tt.url)
		}
		if u.Encode() != tt.name {
			t.Errorf("Encode = %q, want %q", u.Encode(), tt.name)
		}
	}
}

func TestDecodeJavaAndGoEscaping(t *testing.T) {
	want := "consumer://10.0.0.1/org.example.Greeter?category=consumers&methods=*&note=a b~c"
	for _, name := range []string{
		// Java URLEncoder: '*' raw, '~' escaped, space as '+'.
		"consumer%3A%2F%2F10.0.0.1%2Forg.example.Greeter%3Fcategory%3Dconsumers%26methods%3D*%26note%3Da+b%7Ec",
		// Go QueryEscape: '*' escaped, '~' raw.
		"consumer%3A%2F%2F10.0.0.1%2Forg.example.Greeter%3Fcategory%3Dconsumers%26methods%3D%2A%26note%3Da+b~c",
	} {
		u, err := Decode(name)
		if err != nil {
			t.Fatal(err)
		}
		if u.String() != want {
			t.Errorf("Decode(%q) = %q, want %q", name, u.String(), want)
		}
	}
	if got := MustParse(want).Encode(); got != "consumer%3A%2F%2F10.0.0.1%2Forg.example.Greeter%3Fcategory%3Dconsumers%26methods%3D%2A%26note%3Da+b~c" {
		t.Errorf("Encode = %q", got)
	}
	if _, err := Decode("dubbo%3A%2F%2Fh%ZZ"); !errors.Is(err, ErrInvalid) {
		t.Errorf("bad escape: err = %v, want ErrInvalid", err)
	}
}

func TestAddresses(t *testing.T) {
	tests := []struct {
		in          string
		defaultPort int
		want        []string
	}{
		{"zookeeper://a:2181,b:2182,c:2183", 0, []string{"a:2181", "b:2182", "c:2183"}},
		{"zookeeper://a,b:2182", 2181, []string{"a:2181", "b:2182"}},
		{"zookeeper://a:2181?backup=b:2181,c:2181", 0, []string{"a:2181", "b:2181", "c:2181"}},
		{"zookeeper://[::1]:2181,[fe80::1]", 2181, []string{"[::1]:2181", "[fe80::1]:2181"}},
	}
	for _, tt := range tests {
		if got := MustParse(tt.in).Addresses(tt.defaultPort); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Addresses(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
	u := MustParse("zookeeper://a:2181,b:2182")
	if u.Host() != "a" || u.Port() != 2181 || u.Address() != "a:2181" {
		t.Errorf("first host = %s %d %s", u.Host(), u.Port(), u.Address())
	}
}

func TestTypedParams(t *testing.T) {
	u := MustParse("dubbo://h:1/p?timeout=3000&retries=x&check=FALSE&async=true&empty=&weight=200")
	if got := u.IntParam("weight", 100); got != 200 {
		t.Errorf("weight = %d", got)
	}
	if got := u.IntParam("retries", 2); got != 2 {
		t.Errorf("bad retries = %d, want default 2", got)
	}
	if u.BoolParam("check", true) || !u.BoolParam("async", false) || !u.BoolParam("missing", true) {
		t.Error("BoolParam wrong")
	}
	if got := u.MillisParam("timeout", time.Second); got != 3*time.Second {
		t.Errorf("timeout = %v", got)
	}
	if got := u.MillisParam("missing", time.Second); got != time.Second {
		t.Errorf("default timeout = %v", got)
	}
	if got := u.ParamOr("empty", "def"); got != "def" {
		t.Errorf("ParamOr(empty) = %q", got)
	}
	if !u.HasParam("empty") || u.HasParam("missing") {
		t.Error("HasParam wrong")
	}
	r := MustParse("condition://0.0.0.0/g?rule=host+%3D+10.20.153.10+%3D%3E+host+%3D+10.20.153.11")
	if got := r.ParamUnescaped("rule"); got != "host = 10.20.153.10 => host = 10.20.153.11" {
		t.Errorf("rule = %q", got)
	}
}

func TestMutationAndClone(t *testing.T) {
	u := MustParse("dubbo://h:1/p?a=1&timestamp=5")
	c := u.Clone()
	c.SetParam("a", "2")
	if u.Param("a") != "1" {
		t.Error("Clone shares parameters with the original")
	}
	w := u.WithoutParams("timestamp")
	if w.HasParam("timestamp") || !u.HasParam("timestamp") {
		t.Error("WithoutParams must copy")
	}
	if w.String() != "dubbo://h:1/p?a=1" {
		t.Errorf("WithoutParams = %q", w.String())
	}
	n := New("dubbo", "10.0.0.1", 20880, "/org.example.Greeter", map[string]string{"version": "1.0.0", "": "x"})
	if n.String() != "dubbo://10.0.0.1:20880/org.example.Greeter?version=1.0.0" {
		t.Errorf("New = %q", n.String())
	}
}

func TestEquality(t *testing.T) {
	a := MustParse(javaProvider)
	restarted := MustParse(javaProvider)
	restarted.SetParam("pid", "999")
	restarted.SetParam("timestamp", "1800000000000")
	changed := MustParse(javaProvider)
	changed.SetParam("weight", "50")
	if a.Equal(restarted) || !a.EqualIgnoringVolatile(restarted) {
		t.Error("pid/timestamp must only be ignored by EqualIgnoringVolatile")
	}
	if a.EqualIgnoringVolatile(changed) || changed.EqualIgnoringVolatile(a) {
		t.Error("a real change must not compare equal")
	}
	if a.EqualIgnoringVolatile(MustParse("dubbo://192.168.1.10:20881/org.apache.dubbo.demo.DemoService")) {
		t.Error("different port compared equal")
	}
}

func TestServiceKeys(t *testing.T) {
	tests := []struct {
		in, serviceKey, colonKey string
	}{
		{"dubbo://h:1/org.example.Greeter", "org.example.Greeter", "org.example.Greeter::"},
		{"dubbo://h:1/org.example.Greeter?version=1.0.0", "org.example.Greeter:1.0.0", "org.example.Greeter:1.0.0:"},
		{"dubbo://h:1/org.example.Greeter?group=g1", "g1/org.example.Greeter", "org.example.Greeter::g1"},
		{"dubbo://h:1/org.example.Greeter?group=g1&version=0.0.0", "g1/org.example.Greeter", "org.example.Greeter:0.0.0:g1"},
		{"dubbo://h:1/org.example.Greeter?version=*", "org.example.Greeter", "org.example.Greeter:*:"},
		// A customised path: the exporter key follows the path, the rule key the interface.
		{"dubbo://h:1/greeter-v2?interface=org.example.Greeter&version=2", "greeter-v2:2", "org.example.Greeter:2:"},
	}
	for _, tt := range tests {
		u := MustParse(tt.in)
		if got := u.ServiceKey(); got != tt.serviceKey {
			t.Errorf("ServiceKey(%q) = %q, want %q", tt.in, got, tt.serviceKey)
		}
		if got := u.ColonSeparatedKey(); got != tt.colonKey {
			t.Errorf("ColonSeparatedKey(%q) = %q, want %q", tt.in, got, tt.colonKey)
		}
	}
}

// TestServiceKeyParts: the service key from its parts, in Dubbo's order
// interface, version, group, and back.
func TestServiceKeyParts(t *testing.T) {
	tests := []struct {
		iface, version, group string
		key                   string
		// parsed is what ParseServiceKey gives back when it differs from
		// the parts: the versions that mean none are not in the key.
		parsed [3]string
	}{
		{iface: "a.B", key: "a.B"},
		{iface: "a.B", version: "0.0.0", key: "a.B", parsed: [3]string{"a.B", "", ""}},
		{iface: "a.B", version: "*", key: "a.B", parsed: [3]string{"a.B", "", ""}},
		{iface: "a.B", version: "1.0.0", key: "a.B:1.0.0"},
		{iface: "a.B", group: "g", key: "g/a.B"},
		{iface: "a.B", version: "1.0.0", group: "g", key: "g/a.B:1.0.0"},
	}
	for _, tt := range tests {
		if k := ServiceKey(tt.iface, tt.version, tt.group); k != tt.key {
			t.Errorf("ServiceKey(%q, %q, %q) = %q, want %q", tt.iface, tt.version, tt.group, k, tt.key)
		}
		want := [3]string{tt.iface, tt.version, tt.group}
		if tt.parsed != [3]string{} {
			want = tt.parsed
		}
		if i, v, g := ParseServiceKey(tt.key); [3]string{i, v, g} != want {
			t.Errorf("ParseServiceKey(%q) = %q %q %q, want %q", tt.key, i, v, g, want)
		}
	}
	// Rule keys come in the colon-separated form too.
	for key, want := range map[string][3]string{
		"a.B:1.0.0:g":   {"a.B", "1.0.0", "g"},
		"a.B::g":        {"a.B", "", "g"},
		"a.B:1.0.0:":    {"a.B", "1.0.0", ""},
		"g/a.B:1.0.0:h": {"a.B", "1.0.0", "g"},
	} {
		if i, v, g := ParseServiceKey(key); [3]string{i, v, g} != want {
			t.Errorf("ParseServiceKey(%q) = %q %q %q, want %q", key, i, v, g, want)
		}
	}
}

func BenchmarkServiceKey(b *testing.B) {
	b.ReportAllocs()
	var k string
	for b.Loop() {
		k = ServiceKey("org.example.Greeter", "1.0.0", "g1")
	}
	if k != "g1/org.example.Greeter:1.0.0" {
		b.Fatal(k)
	}
}

// TestRedacted: what a URL shows in logs, errors and pages: no password,
// no value of a secret parameter, everything else as String prints it.
func TestRedacted(t *testing.T) {
	tests := []struct{ in, want string }{
		{"zookeeper://admin:hunter2@10.0.0.1:2181,10.0.0.2:2181?backup=10.0.0.3",
			"zookeeper://admin:***@10.0.0.1:2181,10.0.0.2:2181?backup=10.0.0.3"},
		{"zookeeper://127.0.0.1:2181?username=admin&password=hunter2",
			"zookeeper://127.0.0.1:2181?password=***&username=admin"},
		{"dubbo://u:pw@1.2.3.4:1/a?token=tok-1&weight=3&Access-Key=k&db.Passwd=p&secretName=s&credentials=c&accesskey=a",
			"dubbo://u:***@1.2.3.4:1/a?Access-Key=***&accesskey=***&credentials=***&db.Passwd=***&secretName=***&token=***&weight=3"},
		{"dubbo://1.2.3.4:1/a?token=&timeout=5", "dubbo://1.2.3.4:1/a?timeout=5&token="}, // nothing to hide
		{"zookeeper://admin@127.0.0.1:2181", "zookeeper://admin@127.0.0.1:2181"},
	}
	for _, tt := range tests {
		u := MustParse(tt.in)
		before := u.String()
		if got := u.Redacted(); got != tt.want {
			t.Errorf("Redacted(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if u.String() != before {
			t.Errorf("Redacted changed the URL: %q, was %q", u.String(), before)
		}
	}
}

// A URL that does not parse is quoted in the error without its secrets.
func TestParseErrorHidesSecrets(t *testing.T) {
	for _, in := range []string{
		"zookeeper://admin:hunter2@127.0.0.1:99999",
		"zookeeper://admin:hunter2@127.0.0.1:2181,,10.0.0.2:2181",
		"admin:hunter2@127.0.0.1:2181",
		"zookeeper://127.0.0.1:2181:1?password=hunter2&x=1",
		"127.0.0.1:2181?token=hunter2",
	} {
		_, err := Parse(in)
		if err == nil {
			t.Errorf("Parse(%q) succeeded", in)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), Hidden) {
			t.Errorf("Parse(%q): %v", in, err)
		}
		if r := Redact(in); strings.Contains(r, "hunter2") || !strings.Contains(r, Hidden) {
			t.Errorf("Redact(%q) = %q", in, r)
		}
	}
}

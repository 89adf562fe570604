package metadata

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"testing"

	"github.com/dubbo-lab/dubbo/node/url"
)

func TestRevisionJavaFormula(t *testing.T) {
	p := url.MustParse("dubbo://127.0.0.1:20880/org.example.Greeter?application=demo-provider&dubbo=2.0.2&interface=org.example.Greeter&methods=add,sayHello&pid=4242&side=provider&timestamp=1700000000000&version=1.0.0")
	g := url.MustParse("dubbo://127.0.0.1:20880/org.example.Admin?application=demo-provider&group=ops&interface=org.example.Admin&methods=stop&side=provider")
	info := NewInfo("demo-provider", []*url.URL{p, g})

	// app + for each service in match-key order: matchKey + port + path +
	// TreeMap.toString() of the params without pid and timestamp.
	desc := "demo-provider" +
		"ops/org.example.Admin:dubbo" + "20880" + "org.example.Admin" +
		"{application=demo-provider, group=ops, interface=org.example.Admin, methods=stop, side=provider}" +
		"org.example.Greeter:1.0.0:dubbo" + "20880" + "org.example.Greeter" +
		"{application=demo-provider, dubbo=2.0.2, interface=org.example.Greeter, methods=add,sayHello, side=provider, version=1.0.0}"
	sum := md5.Sum([]byte(desc))
	if want := hex.EncodeToString(sum[:]); info.Revision != want {
		t.Errorf("revision %s, want %s", info.Revision, want)
	}
	// Restarting the same provider (new pid, timestamp) keeps the revision.
	p2 := p.Clone()
	p2.SetParam("pid", "1")
	p2.SetParam("timestamp", "1")
	if again := NewInfo("demo-provider", []*url.URL{g, p2}); again.Revision != info.Revision {
		t.Errorf("revision changed with pid/timestamp: %s vs %s", again.Revision, info.Revision)
	}
	if NewInfo("x", nil).Revision != EmptyRevision {
		t.Error("empty app revision is not 0")
	}
}

func TestInfoJSON(t *testing.T) {
	p := url.MustParse("dubbo://127.0.0.1:20880/org.example.Greeter?application=demo-provider&interface=org.example.Greeter&version=1.0.0")
	b, err := json.Marshal(NewInfo("demo-provider", []*url.URL{p}))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		App      string
		Revision string
		Services map[string]map[string]any
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	s := doc.Services["org.example.Greeter:1.0.0:dubbo"]
	if doc.App != "demo-provider" || len(doc.Revision) != 32 || s == nil {
		t.Fatalf("info json %s", b)
	}
	for k, want := range map[string]any{"name": "org.example.Greeter", "version": "1.0.0", "protocol": "dubbo", "port": 20880.0, "path": "org.example.Greeter"} {
		if s[k] != want {
			t.Errorf("service %s = %v, want %v (json %s)", k, s[k], want, b)
		}
	}
	if _, ok := s["group"]; ok {
		t.Errorf("empty group written: %s", b)
	}
}

func TestParseInstanceFromDubboGo(t *testing.T) {
	// dubbo-go omits sslPort, serviceType, uriSpec and adds tag.
	data := `{"name":"go-app","id":"10.0.0.1:20000","address":"10.0.0.1","port":20000,"payload":{"@class":"org.apache.dubbo.registry.zookeeper.ZookeeperInstance","id":"10.0.0.1:20000","name":"go-app","metadata":{"dubbo.endpoints":"[{\"port\":20000,\"protocol\":\"tri\"}]","dubbo.metadata.revision":"abc"}},"registrationTimeUTC":0,"tag":""}`
	in, err := ParseInstance([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	eps, err := in.Endpoints()
	if err != nil || len(eps) != 1 || eps[0].Protocol != "tri" || in.Revision() != "abc" {
		t.Errorf("instance %+v endpoints %v err %v", in, eps, err)
	}
	if _, err := ParseInstance([]byte(`{"name":"x"}`)); err == nil {
		t.Error("instance without address accepted")
	}
}

func FuzzParseInstance(f *testing.F) {
	f.Add([]byte(`{"name":"a","id":"h:1","address":"h","port":1,"payload":{"metadata":{"dubbo.endpoints":"[]"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := ParseInstance(data)
		if err != nil {
			return
		}
		_, _ = in.Endpoints()
		_, _ = in.MetadataServiceParams()
	})
}

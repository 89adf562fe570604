package stats

import (
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/stats/histogram"
	"github.com/dubbo-lab/dubbo/node/url"
)

var end = time.UnixMilli(1732870800000)

func providerSample() Sample {
	return Sample{
		Side: Provider, Application: "demo", Host: "10.0.0.5", Port: 20880,
		Interface: "org.example.Greeter", Version: "1.0.0", Method: "sayHello", Peer: "10.0.0.9",
		Success: 120, Failure: 3, Input: 24000, Output: 3600, Elapsed: 250, Concurrent: 2,
		MaxInput: 210, MaxOutput: 40, MaxElapsed: 12, MaxConcurrent: 5,
		Timestamp: end, Interval: time.Minute, Node: "host-1234-1732870000000",
		Histogram: mustHistogram("896:100,1024:20,49152:3"),
	}
}

func mustHistogram(text string) histogram.Sparse {
	h, err := histogram.ParseText(text)
	if err != nil {
		panic(err)
	}
	return h.Sparse()
}

// The URL is Dubbo's statistics URL, parameter for parameter, plus node
// and interval.
func TestSampleURL(t *testing.T) {
	p := providerSample()
	c := p
	c.Side, c.Host, c.Port, c.Peer, c.Group, c.Version, c.Node, c.Interval, c.Histogram = Consumer, "10.0.0.9", 0, "10.0.0.5:20880", "g1", "", "", 0, ""
	for _, tc := range []struct {
		s    Sample
		want string
	}{
		{p, "count://10.0.0.5:20880/org.example.Greeter/sayHello?application=demo&concurrent=2&consumer=10.0.0.9" +
			"&elapsed=250&elapsed.histogram=896:100,1024:20,49152:3&failure=3&input=24000&interface=org.example.Greeter&interval=60000&max.concurrent=5" +
			"&max.elapsed=12&max.input=210&max.output=40&method=sayHello&node=host-1234-1732870000000&output=3600" +
			"&success=120&timestamp=1732870800000&version=1.0.0"},
		{c, "count://10.0.0.9/org.example.Greeter/sayHello?application=demo&concurrent=2&elapsed=250&failure=3" +
			"&group=g1&input=24000&interface=org.example.Greeter&max.concurrent=5&max.elapsed=12&max.input=210" +
			"&max.output=40&method=sayHello&output=3600&provider=10.0.0.5:20880&success=120&timestamp=1732870800000"},
	} {
		if got := tc.s.URL().String(); got != tc.want {
			t.Errorf("URL:\n got %s\nwant %s", got, tc.want)
		}
		back, err := ParseSample(tc.s.URL())
		if err != nil {
			t.Fatal(err)
		}
		if back != tc.s {
			t.Errorf("round trip:\n got %+v\nwant %+v", back, tc.s)
		}
	}
}

// What a Java Dubbo 2.7 node sends: MonitorFilter's URL summed by
// DubboMonitor (no node, no interval, input empty on a consumer), and the
// "dubbo" parameter DubboMonitor adds.
func TestParseJavaSample(t *testing.T) {
	u := url.MustParse("count://192.168.1.7/com.foo.BarService/echo?application=java-app&concurrent=1" +
		"&dubbo=2.0.2&elapsed=17&failure=0&input=&interface=com.foo.BarService&max.concurrent=2&max.elapsed=9" +
		"&max.input=0&max.output=310&method=echo&output=620&provider=192.168.1.8:20880&success=2&timestamp=1732870812345")
	s, err := ParseSample(u)
	if err != nil {
		t.Fatal(err)
	}
	want := Sample{Side: Consumer, Application: "java-app", Host: "192.168.1.7", Interface: "com.foo.BarService",
		Method: "echo", Peer: "192.168.1.8:20880", Success: 2, Output: 620, Elapsed: 17, Concurrent: 1,
		MaxOutput: 310, MaxElapsed: 9, MaxConcurrent: 2, Timestamp: time.UnixMilli(1732870812345)}
	if s != want {
		t.Errorf("got  %+v\nwant %+v", s, want)
	}
	// Without node, the reporter's application and address tell it apart.
	id := s.ID()
	if id.Node != "" || id.Application != "java-app" || id.Address != "192.168.1.7" || id.Timestamp != 1732870812345 {
		t.Errorf("ID %+v", id)
	}
}

// A sample sent again has the same ID; another interval, peer, side or
// node does not.
func TestSampleID(t *testing.T) {
	s := providerSample()
	again, err := ParseSample(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if again.ID() != s.ID() {
		t.Errorf("resent sample has another ID: %+v vs %+v", again.ID(), s.ID())
	}
	for name, change := range map[string]func(*Sample){
		"interval": func(x *Sample) { x.Timestamp = x.Timestamp.Add(time.Minute) },
		"peer":     func(x *Sample) { x.Peer = "10.0.0.10" },
		"node":     func(x *Sample) { x.Node = "other-process" },
		"replica":  func(x *Sample) { x.Port = 20881 },
		"side":     func(x *Sample) { x.Side = Consumer },
		"method":   func(x *Sample) { x.Method = "add" },
	} {
		x := s
		change(&x)
		if x.ID() == s.ID() {
			t.Errorf("another %s, same ID", name)
		}
	}
}

func TestParseSampleErrors(t *testing.T) {
	base := "count://10.0.0.5:20880/I/m?consumer=10.0.0.9&timestamp=1"
	for _, tc := range []struct{ url, want string }{
		{"dubbo://10.0.0.5:20880/I/m?consumer=10.0.0.9&timestamp=1", "protocol"},
		{"count://10.0.0.5:20880/I/m?timestamp=1", "exactly one of"},
		{"count://10.0.0.5:20880/I/m?consumer=a&provider=b&timestamp=1", "exactly one of"},
		{"count://10.0.0.5:20880/Im?consumer=10.0.0.9&timestamp=1", "no interface or method"},
		{"count://10.0.0.5:20880/I/m?consumer=10.0.0.9", "no timestamp"},
		{base + "&success=many", `success="many"`},
		{base + "&elapsed=-3", `elapsed="-3"`},
		{base + "&max.concurrent=99999999999999999999", "max.concurrent"},
		{"count://10.0.0.5:20880/I/m?consumer=10.0.0.9&timestamp=yesterday", "timestamp"},
		{base + "&interval=9223372036854775807", "interval"},
		{base + "&elapsed.histogram=1000:5", "elapsed.histogram"},
		{base + "&elapsed.histogram=896:0", "elapsed.histogram"},
	} {
		_, err := ParseSample(url.MustParse(tc.url))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSample(%s) = %v, want an error with %q", tc.url, err, tc.want)
		}
	}
	// interface and method come from the path when the parameters are absent
	s, err := ParseSample(url.MustParse(base))
	if err != nil || s.Interface != "I" || s.Method != "m" || s.Side != Provider || s.Peer != "10.0.0.9" {
		t.Errorf("minimal sample: %+v, %v", s, err)
	}
}

func FuzzParseSample(f *testing.F) {
	f.Add(providerSample().URL().String())
	f.Add("count://192.168.1.7/com.foo.BarService/echo?application=a&input=&provider=192.168.1.8:20880&success=2&timestamp=1")
	f.Add("count://[::1]:20880/I/m?consumer=::1&timestamp=0&interval=1000&node=n")
	f.Add("count://h/I/m?consumer=c&timestamp=1&elapsed.histogram=0:1,896:2,896:3,134217728:4")
	f.Fuzz(func(t *testing.T, s string) {
		u, err := url.Parse(s)
		if err != nil {
			return
		}
		sample, err := ParseSample(u)
		if err != nil {
			return
		}
		again, err := ParseSample(sample.URL())
		if err != nil {
			t.Fatalf("%q parsed, but its URL %q does not: %v", s, sample.URL(), err)
		}
		if again.ID() != sample.ID() || again.Success != sample.Success || again.MaxConcurrent != sample.MaxConcurrent ||
			again.Histogram != sample.Histogram {
			t.Fatalf("round trip of %q:\n got %+v\nwant %+v", s, again, sample)
		}
	})
}

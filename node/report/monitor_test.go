package report_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	hessian "github.com/apache/dubbo-go-hessian2"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/report"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/stats"
)

func sample() stats.Sample {
	return stats.Sample{
		Side: stats.Provider, Application: "demo", Host: "127.0.0.1", Port: 20880,
		Interface: "org.example.Greeter", Version: "1.0.0", Method: "sayHello", Peer: "127.0.0.1",
		Success: 41, Failure: 1, Input: 8200, Output: 900, Elapsed: 77, Concurrent: 3,
		MaxInput: 205, MaxOutput: 22, MaxElapsed: 9, MaxConcurrent: 6,
		Timestamp: time.UnixMilli(1732870800000), Interval: time.Minute, Node: "box-42-1732870000000",
	}
}

// hessianRoundTrip encodes v with the real hessian library and decodes the
// bytes with a fresh decoder, as the monitor's codec would.
func hessianRoundTrip(t *testing.T, v any) (any, []byte) {
	t.Helper()
	enc := hessian.NewEncoder()
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	b := enc.Buffer()
	got, err := hessian.NewDecoder(b).Decode()
	if err != nil {
		t.Fatal(err)
	}
	return got, b
}

// The URL argument is a hessian object of class org.apache.dubbo.common.URL
// with Dubbo 2.7's fields, and reads back as the same sample.
func TestURLObjectRoundTrip(t *testing.T) {
	s := sample()
	got, b := hessianRoundTrip(t, report.URLObject(s.URL(), ""))
	for _, want := range []string{"org.apache.dubbo.common.URL", "protocol", "username", "password", "host", "port", "path", "parameters"} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("encoded URL lacks %q", want)
		}
	}
	if m, ok := got.(map[string]any); !ok || m[hessian.ClassKey] != report.URLClass {
		t.Fatalf("decoded %T %v, want an object of %s", got, got, report.URLClass)
	}
	back, err := report.SampleFromArg(got)
	if err != nil {
		t.Fatal(err)
	}
	if back != s {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, s)
	}
}

// A Dubbo 3 Java node serializes its URL as urlAddress and urlParam
// (toSerializableURL: PathURLAddress, URLPlainParam); a Java 2.7 node
// without node or interval. Both read back.
func TestJavaURLForms(t *testing.T) {
	params := map[any]any{"application": "java-app", "interface": "com.foo.Bar", "method": "echo",
		"provider": "10.0.0.8:20880", "success": "3", "elapsed": "12", "timestamp": "1732870812345", "input": ""}
	dubbo3 := map[string]any{
		hessian.ClassKey: report.URLClass,
		"urlAddress": map[string]any{hessian.ClassKey: "org.apache.dubbo.common.url.component.PathURLAddress",
			"protocol": "count", "username": nil, "password": nil, "path": "com.foo.Bar/echo", "host": "10.0.0.7", "port": int32(0)},
		"urlParam": map[string]any{hessian.ClassKey: "org.apache.dubbo.common.url.component.URLPlainParam",
			"rawParam": "", "EXTRA_PARAMS": params, "METHOD_PARAMETERS": map[any]any{}, "enableCompressed": false},
		"attributes": nil,
	}
	raw := map[string]any{
		hessian.ClassKey: report.URLClass,
		"urlAddress":     dubbo3["urlAddress"],
		"urlParam": map[string]any{hessian.ClassKey: "org.apache.dubbo.common.url.component.URLPlainParam",
			"rawParam": "application=java-app&interface=com.foo.Bar&method=echo&provider=10.0.0.8:20880&success=3&elapsed=12&timestamp=1732870812345"},
	}
	dubbo27 := map[string]any{hessian.ClassKey: "com.alibaba.dubbo.common.URL", "protocol": "count", "host": "10.0.0.7",
		"port": int32(0), "path": "com.foo.Bar/echo", "parameters": params, "username": nil, "password": nil}
	want := stats.Sample{Side: stats.Consumer, Application: "java-app", Host: "10.0.0.7", Interface: "com.foo.Bar",
		Method: "echo", Peer: "10.0.0.8:20880", Success: 3, Elapsed: 12, Timestamp: time.UnixMilli(1732870812345)}
	for name, v := range map[string]any{"dubbo3": dubbo3, "dubbo3 rawParam": raw, "dubbo2.7": dubbo27} {
		got, _ := hessianRoundTrip(t, v)
		s, err := report.SampleFromArg(got)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if s != want {
			t.Errorf("%s:\n got %+v\nwant %+v", name, s, want)
		}
	}
}

func TestURLFromArgErrors(t *testing.T) {
	ok := func() map[string]any {
		return map[string]any{"protocol": "count", "host": "h", "port": int32(1), "path": "I/m",
			"parameters": map[string]any{"consumer": "c", "timestamp": "1"}}
	}
	with := func(k string, v any) map[string]any { m := ok(); m[k] = v; return m }
	for _, tc := range []struct {
		v    any
		want string
	}{
		{int32(7), "want a org.apache.dubbo.common.URL object"},
		{with("port", int32(70000)), "out of range"},
		{with("port", "eighty"), "not a number"},
		{with("port", []byte{1}), "want an int"},
		{with("parameters", "a=b"), "parameters: want a map"},
		{with("parameters", map[string]any{"success": []any{1}}), "parameter success: want a string"},
		{with("protocol", nil), "no protocol"},
		{with("host", 3.5), "host: want a string"},
		{with("protocol", "dubbo"), "protocol"},
		{"count://h/I/m?timestamp=1", "want exactly one of"},
	} {
		_, err := report.SampleFromArg(tc.v)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SampleFromArg(%v) = %v, want an error with %q", tc.v, err, tc.want)
		}
	}
	if _, err := report.SampleFromArg(ok()); err != nil {
		t.Errorf("valid argument: %v", err)
	}
}

// The request the sender makes is Dubbo's: interface, method and the JVM
// descriptor of collect(URL).
func TestCollectRequest(t *testing.T) {
	var got []any
	inv := rpc.InvokerFunc(func(_ context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
		if inv.Service != report.MonitorService || inv.Method != "collect" || len(inv.ParamTypes) != 1 || inv.ParamTypes[0] != report.URLClass {
			t.Errorf("call %s.%s(%v)", inv.Service, inv.Method, inv.ParamTypes)
		}
		got = append(got, inv.Args...)
		return &rpc.Result{}, nil
	})
	s := &report.InvokerSender{Invoker: inv, Parallel: 1}
	rep := &report.Report{Samples: []stats.Sample{sample(), sample()}}
	rep.Samples[1].Method = "add"
	if err := s.Send(context.Background(), rep); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("%d collect calls, want one per sample", len(got))
	}
	desc, err := protocol.Descriptor([]string{report.URLClass})
	if err != nil || desc != "Lorg/apache/dubbo/common/URL;" {
		t.Errorf("descriptor %q %v", desc, err)
	}
}

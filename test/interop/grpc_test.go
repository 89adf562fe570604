package interop

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/dubbogo"
	"github.com/dubbo-lab/dubbo/internal/testkit/ghz"
	"github.com/dubbo-lab/dubbo/internal/testkit/greetgrpc"
	"github.com/dubbo-lab/dubbo/internal/testkit/grpcjs"
	"github.com/dubbo-lab/dubbo/internal/testkit/grpcurl"
)

// The gRPC ecosystem's own clients, unchanged, against servers of
// greet.GreetService: grpcurl (reflection, no proto file), Node's
// @grpc/grpc-js (a client that shares no code with Go) and the ghz load
// generator. Each server is a row of grpcTargets.

// greetProto is examples/greet's proto, which grpc-js and ghz load.
const greetProto = "../../examples/greet/greetpb/greet.proto"

// A grpcTarget is a server of greet.GreetService and what it answers
// where servers may differ.
type grpcTarget struct {
	name string
	// start serves until the test ends and returns host:port.
	start func(t *testing.T) string
	// services are what reflection lists, sorted.
	services []string
	// failName is a Greet name the server fails, with the status code and
	// message clients get; "" when it has none.
	failName    string
	failCode    int
	failMessage string
	// health says it serves grpc.health.v1.Health; healthUnknownCode is
	// its status for a service it does not serve.
	health            bool
	healthUnknownCode int
}

// statusUnimplemented is gRPC's status for an unknown method.
const statusUnimplemented = 12

var grpcTargets = []grpcTarget{
	{
		name:  "grpc-go",
		start: func(t *testing.T) string { return greetgrpc.Start(t, greetgrpc.Options{}).Addr() },
		services: []string{greetService, "grpc.reflection.v1.ServerReflection",
			"grpc.reflection.v1alpha.ServerReflection"},
		failName: "fail:9:not now", failCode: 9, failMessage: "not now",
	},
	{
		// dubbo-go v3.3.0's Triple provider serves reflection v1alpha only
		// (grpcurl falls back to it), and answers a handler's error and an
		// unknown health service with its status 17, outside gRPC's 0-16.
		name: "dubbo-go",
		start: func(t *testing.T) string {
			return dubbogo.StartProvider(t, dubbogo.ProviderOptions{Protocol: "tri"}).Addr
		},
		services: []string{greetService, "grpc.health.v1.Health",
			"grpc.reflection.v1alpha.ServerReflection", greeterIface},
		failName: "fail:boom", failCode: 17, failMessage: "boom",
		health: true, healthUnknownCode: 17,
	},
	{
		// The dubbo binary serving Triple with the examples/greet plugin:
		// reflection both ways, health, and an unknown health service
		// NOT_FOUND (5), within gRPC's codes.
		name:  "ours",
		start: func(t *testing.T) string { return startTripleProvider(t).Addr },
		services: []string{greetService, "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection",
			"grpc.reflection.v1alpha.ServerReflection"},
		health: true, healthUnknownCode: 5,
	},
}

// Every target answers grpcurl, grpc-js and ghz as a gRPC server must.
func TestGRPCClientsAgainstTripleServers(t *testing.T) {
	dubbogo.Build(t)
	curl := grpcurl.Build(t)
	js := grpcjs.Install(t)
	load := ghz.Build(t)
	proto, err := filepath.Abs(greetProto)
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range grpcTargets {
		t.Run(tg.name, func(t *testing.T) {
			addr := tg.start(t)
			t.Run("grpcurl", func(t *testing.T) { checkGrpcurl(t, curl, tg, addr) })
			t.Run("grpc-js", func(t *testing.T) { checkGrpcJS(t, js, tg, addr, proto) })
			t.Run("ghz", func(t *testing.T) { checkGhz(t, load, tg, addr, proto) })
		})
	}
}

// checkGrpcurl lists, describes and calls the target with grpcurl, which
// learns everything by reflection.
func checkGrpcurl(t *testing.T, curl *grpcurl.Tool, tg grpcTarget, addr string) {
	services, err := curl.List(addr)
	if err != nil || !slices.Equal(services, tg.services) {
		t.Errorf("grpcurl list: %q (%v), want %q", services, err, tg.services)
	}

	desc, err := curl.Describe(addr, greetService)
	if err != nil {
		t.Errorf("grpcurl describe %s: %v", greetService, err)
	}
	for _, rpc := range []string{
		"rpc Greet ( .greet.GreetRequest ) returns ( .greet.GreetResponse );",
		"rpc GreetServerStream ( .greet.GreetStreamRequest ) returns ( stream .greet.GreetResponse );",
		"rpc GreetClientStream ( stream .greet.GreetRequest ) returns ( .greet.GreetResponse );",
		"rpc GreetStream ( stream .greet.GreetRequest ) returns ( stream .greet.GreetResponse );",
	} {
		if !strings.Contains(desc, rpc) {
			t.Errorf("grpcurl describe %s lacks %q:\n%s", greetService, rpc, desc)
		}
	}
	if desc, err := curl.Describe(addr, "greet.GreetStreamRequest"); err != nil ||
		!strings.Contains(desc, "string name = 1;") || !strings.Contains(desc, "int32 count = 2;") {
		t.Errorf("grpcurl describe greet.GreetStreamRequest: %v\n%s", err, desc)
	}

	for _, c := range []struct {
		method, data string
		headers      []string
		want         []string
	}{
		{"Greet", `{"name":"x"}`, nil, []string{`{"greeting":"Hello, x"}`}},
		{"Greet", `{"name":"h"}`, []string{"x-request-id: t5-1"}, []string{`{"greeting":"Hello, h"}`}},
		{"GreetServerStream", `{"name":"x","count":2}`, nil, []string{`{"greeting":"Hello, x #1"}`, `{"greeting":"Hello, x #2"}`}},
		{"GreetClientStream", `{"name":"a"} {"name":"b"}`, nil, []string{`{"greeting":"Hello, a,b"}`}},
		{"GreetStream", `{"name":"a"} {"name":"b"}`, nil, []string{`{"greeting":"Hello, a"}`, `{"greeting":"Hello, b"}`}},
	} {
		got, err := curl.Call(addr, greetService+"/"+c.method, c.data, c.headers...)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("grpcurl -d '%s' %v %s: %q (%v), want %q", c.data, c.headers, c.method, got, err, c.want)
		}
	}

	if tg.failName != "" {
		_, err := curl.Call(addr, greetService+"/Greet", `{"name":"`+tg.failName+`"}`)
		var st *grpcurl.StatusError
		if !errors.As(err, &st) || st.Code != tg.failCode || st.Message != tg.failMessage {
			t.Errorf("grpcurl Greet(%s): %v, want status %d %q", tg.failName, err, tg.failCode, tg.failMessage)
		}
	}

	if tg.health {
		for _, svc := range []string{"", greetService} {
			got, err := curl.Call(addr, "grpc.health.v1.Health/Check", `{"service":"`+svc+`"}`)
			if want := []string{`{"status":"SERVING"}`}; err != nil || !slices.Equal(got, want) {
				t.Errorf("grpcurl Health/Check %q: %q (%v), want %q", svc, got, err, want)
			}
		}
		_, err := curl.Call(addr, "grpc.health.v1.Health/Check", `{"service":"no.Such"}`)
		var st *grpcurl.StatusError
		if !errors.As(err, &st) || st.Code != tg.healthUnknownCode {
			t.Errorf("grpcurl Health/Check no.Such: %v, want status %d", err, tg.healthUnknownCode)
		}
	}
}

// checkGrpcJS makes every kind of call with grpc-js, from the proto file.
func checkGrpcJS(t *testing.T, js *grpcjs.Client, tg grpcTarget, addr, proto string) {
	msgs := func(js ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(js))
		for i, m := range js {
			out[i] = json.RawMessage(m)
		}
		return out
	}
	type want struct {
		responses string // joined by " "
		code      int
		details   string // "": not checked (servers word it differently)
	}
	calls := []grpcjs.Call{
		{Method: "Greet", Requests: msgs(`{"name":"x"}`), Metadata: map[string]string{"x-request-id": "t5-2"}},
		{Method: "GreetServerStream", Requests: msgs(`{"name":"x","count":3}`)},
		{Method: "GreetClientStream", Requests: msgs(`{"name":"a"}`, `{"name":"b"}`, `{"name":"c"}`)},
		{Method: "GreetStream", Requests: msgs(`{"name":"a"}`, `{"name":"b"}`)},
		{Method: "NoSuchMethod"},
	}
	wants := []want{
		{responses: `{"greeting":"Hello, x"}`},
		{responses: `{"greeting":"Hello, x #1"} {"greeting":"Hello, x #2"} {"greeting":"Hello, x #3"}`},
		{responses: `{"greeting":"Hello, a,b,c"}`},
		{responses: `{"greeting":"Hello, a"} {"greeting":"Hello, b"}`},
		{code: statusUnimplemented},
	}
	if tg.failName != "" {
		calls = append(calls, grpcjs.Call{Method: "Greet", Requests: msgs(`{"name":"` + tg.failName + `"}`)})
		wants = append(wants, want{code: tg.failCode, details: tg.failMessage})
	}

	results, err := js.Run(addr, proto, greetService, calls...)
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(calls) {
		t.Fatalf("grpc-js made %d calls, want %d: %+v", len(results), len(calls), results)
	}
	for i, r := range results {
		var got []string
		for _, m := range r.Responses {
			got = append(got, string(m))
		}
		w := wants[i]
		if strings.Join(got, " ") != w.responses || r.Code != w.code || (w.details != "" && r.Details != w.details) {
			t.Errorf("grpc-js %s %s: responses %q, status %d %q; want %s, status %d %q",
				calls[i].Method, calls[i].Requests, got, r.Code, r.Details, w.responses, w.code, w.details)
		}
	}
}

// checkGhz makes a short load run with ghz: every call answered; and
// one of failing calls, which ghz must count as failed.
func checkGhz(t *testing.T, load *ghz.Tool, tg grpcTarget, addr, proto string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	opts := ghz.Options{
		Addr: addr, Proto: proto, Call: greetService + "/Greet", Data: `{"name":"world"}`,
		Concurrency: 8, Calls: 400,
	}
	r, err := load.Run(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ghz: %d calls, %.0f calls/s, p50 %s, p99 %s", r.Calls, r.QPS, r.P50, r.P99)
	if r.Calls != 400 || r.Errors != 0 || r.QPS <= 0 || r.P50 <= 0 || r.P99 < r.P50 {
		t.Errorf("ghz run: %+v, want 400 calls, none failed, with rates and latencies", r)
	}

	if tg.failName != "" {
		opts.Data, opts.Calls = `{"name":"`+tg.failName+`"}`, 20
		r, err := load.Run(ctx, opts)
		if err != nil || r.Calls != 20 || r.Errors != 20 {
			t.Errorf("ghz run of Greet(%s): %+v, %v; want 20 calls, all failed", tg.failName, r, err)
		}
	}
}

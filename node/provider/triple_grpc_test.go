//lint:file-ignore SA1019 v1alpha is deprecated, and what the provider must still serve.
package provider_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"

	"github.com/dubbo-lab/dubbo/examples/greet/greetpb"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/node/idl"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// gRPC server reflection, v1 and v1alpha as grpc-go's clients speak them,
// lists the port's protobuf services and its own, and describes a plugin's
// service from the descriptors the plugin gave (idl.Resolve is what
// dubbo call uses).
func TestTripleReflection(t *testing.T) {
	p := startTriple(t, provider.Config{}, provider.Options{})
	exportPlugin(t, p, startPlugin(t, "greet"))
	if err := p.Export(testCtx(t), providertest.Greeter(nil)); err != nil { // no descriptor: not listed
		t.Fatal(err)
	}
	cc := grpcConn(t, p.Addr())
	ctx := testCtx(t)
	want := []string{"greet.GreetService", "grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"}

	v1, err := reflectionv1.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := v1.Send(&reflectionv1.ServerReflectionRequest{MessageRequest: &reflectionv1.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := v1.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		got = append(got, s.Name)
	}
	if !slices.Equal(got, want) {
		t.Errorf("v1 lists %v, want %v", got, want)
	}

	alpha, err := reflectionv1alpha.NewServerReflectionClient(cc).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := alpha.Send(&reflectionv1alpha.ServerReflectionRequest{MessageRequest: &reflectionv1alpha.ServerReflectionRequest_FileContainingSymbol{
		FileContainingSymbol: "greet.GreetService"}}); err != nil {
		t.Fatal(err)
	}
	aresp, err := alpha.Recv()
	if err != nil || len(aresp.GetFileDescriptorResponse().GetFileDescriptorProto()) == 0 {
		t.Errorf("v1alpha file containing greet.GreetService: %v, %v", aresp, err)
	}

	svc, err := idl.Resolve(ctx, cc, "greet.GreetService")
	if err != nil {
		t.Fatal(err)
	}
	m, err := idl.MethodOf(svc, "GreetServerStream")
	if err != nil || m.Kind() != rpc.ServerStream || m.RequestType() != "greet.GreetStreamRequest" {
		t.Errorf("GreetServerStream from reflection: %v, %v", m, err)
	}
}

// grpc.health.v1.Health: the whole server follows the node's readiness;
// a service is SERVING while registered, NOT_SERVING while offline; an
// unknown one is NOT_FOUND; a watcher hears NOT_SERVING when the provider
// shuts down, and its call ends so the drain does not wait for it.
func TestTripleHealth(t *testing.T) {
	var ready atomic.Bool
	ready.Store(true)
	p := startTriple(t, provider.Config{}, provider.Options{Ready: ready.Load})
	exportPlugin(t, p, startPlugin(t, "greet"))
	hc := healthpb.NewHealthClient(grpcConn(t, p.Addr()))
	ctx := testCtx(t)
	check := func(service string) (healthpb.HealthCheckResponse_ServingStatus, codes.Code) {
		t.Helper()
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{Service: service})
		return resp.GetStatus(), status.Code(err)
	}
	serving, notServing := healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_NOT_SERVING
	for _, tc := range []struct {
		service string
		want    healthpb.HealthCheckResponse_ServingStatus
		code    codes.Code
	}{
		{"", serving, codes.OK},
		{"greet.GreetService", serving, codes.OK},
		{"grpc.health.v1.Health", serving, codes.OK},
		{"no.Such", 0, codes.NotFound},
	} {
		if st, code := check(tc.service); st != tc.want || code != tc.code {
			t.Errorf("Check(%q) = %v, %v; want %v, %v", tc.service, st, code, tc.want, tc.code)
		}
	}
	ready.Store(false)
	if st, _ := check(""); st != notServing {
		t.Errorf("Check(\"\") while the node is not ready = %v", st)
	}
	ready.Store(true)

	all := func(string) bool { return true }
	if _, err := p.Offline(ctx, all); err != nil {
		t.Fatal(err)
	}
	if st, _ := check("greet.GreetService"); st != notServing {
		t.Errorf("Check(greet.GreetService) while offline = %v", st)
	}
	// Offline only withdraws it from the registry: calls are still served.
	var resp greetpb.GreetResponse
	if err := grpcConn(t, p.Addr()).Invoke(ctx, "/greet.GreetService/Greet", &greetpb.GreetRequest{Name: "offline"}, &resp); err != nil || resp.Greeting != "Hello, offline" {
		t.Errorf("Greet while offline: %q, %v", resp.Greeting, err)
	}
	if _, err := p.Online(ctx, all); err != nil {
		t.Fatal(err)
	}
	if st, _ := check("greet.GreetService"); st != serving {
		t.Errorf("Check(greet.GreetService) online again = %v", st)
	}

	watch, err := hc.Watch(ctx, &healthpb.HealthCheckRequest{Service: ""})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := watch.Recv(); err != nil || r.Status != serving {
		t.Fatalf("Watch: %v, %v", r, err)
	}
	start := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- p.Shutdown(context.Background()) }()
	if r, err := watch.Recv(); err != nil || r.Status != notServing {
		t.Errorf("Watch during shutdown: %v, %v; want NOT_SERVING", r, err)
	}
	if _, err := watch.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("Watch after NOT_SERVING: %v, want the call ended (Unavailable)", err)
	}
	if err := <-stopped; err != nil || time.Since(start) > 5*time.Second {
		t.Errorf("Shutdown with a watcher: %v after %v", err, time.Since(start))
	}
}

// Graceful shutdown under Triple calls: the calls in flight finish with
// their answers, new ones are refused.
func TestTripleGracefulShutdown(t *testing.T) {
	p := startTriple(t, provider.Config{}, provider.Options{})
	exportPlugin(t, p, startPlugin(t, "greeter"))
	c := tripleClient(t, p.Addr())
	ctx := testCtx(t)
	results := make(chan error, 5)
	for range 5 {
		go func() {
			res, err := c.Invoke(ctx, greeterTri("sleep", []string{"int"}, int32(400)))
			if err == nil && res.Value != "slept" {
				err = status.Errorf(codes.Internal, "answered %v", res.Value)
			}
			results <- err
		}()
	}
	time.Sleep(150 * time.Millisecond)
	if err := p.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	for range 5 {
		if err := <-results; err != nil {
			t.Errorf("a call in flight during shutdown: %v", err)
		}
	}
	if _, err := c.Invoke(ctx, greeterTri("sayHello", str, "late")); err == nil {
		t.Error("a call after shutdown was served")
	}
}

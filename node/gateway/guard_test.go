package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// A browser page must not reach the gateway: not with a "simple" request
// (text/plain, a form, no body), not from a foreign Origin, not through a
// DNS name rebound to 127.0.0.1; and callers off loopback need the token.
// Before, a text/plain POST from Origin http://evil.example and a request
// with Host attacker.example were both answered 200.
func TestGuard(t *testing.T) {
	type request struct {
		method, target, host, remote, contentType, origin, auth string
	}
	post := func(r request) request {
		r.method, r.target = http.MethodPost, "/invoke/org.example.Greeter/sayHello"
		if r.host == "" {
			r.host = "127.0.0.1:8081"
		}
		if r.remote == "" {
			r.remote = "127.0.0.1:40000"
		}
		if r.contentType == "-" {
			r.contentType = ""
		} else if r.contentType == "" {
			r.contentType = "application/json"
		}
		return r
	}
	tests := []struct {
		name   string
		opts   Options
		req    request
		status int
		kind   string
	}{
		{"local JSON call", Options{}, post(request{}), 200, ""},
		{"JSON with a charset", Options{}, post(request{contentType: "application/json; charset=utf-8"}), 200, ""},
		{"text/plain from a web page", Options{}, post(request{contentType: "text/plain", origin: "http://evil.example"}), 403, "forbidden"},
		{"text/plain", Options{}, post(request{contentType: "text/plain"}), 415, "unsupported_media_type"},
		{"a form", Options{}, post(request{contentType: "application/x-www-form-urlencoded"}), 415, "unsupported_media_type"},
		{"no content type", Options{}, post(request{contentType: "-"}), 415, "unsupported_media_type"},
		{"JSON from a foreign origin", Options{}, post(request{origin: "http://evil.example"}), 403, "forbidden"},
		{"origin null", Options{}, post(request{origin: "null"}), 403, "forbidden"},
		{"foreign origin on our port", Options{}, post(request{origin: "http://evil.example:8081"}), 403, "forbidden"},
		{"own origin", Options{}, post(request{origin: "http://127.0.0.1:8081"}), 200, ""},
		{"own origin by localhost", Options{}, post(request{origin: "http://localhost:8081", host: "localhost:8081"}), 200, ""},
		{"rebound DNS name", Options{}, post(request{host: "attacker.example:8081"}), 403, "forbidden"},
		{"rebound DNS name without port", Options{}, post(request{host: "attacker.example"}), 403, "forbidden"},
		{"localhost", Options{}, post(request{host: "localhost:8081"}), 200, ""},
		{"IPv6 loopback", Options{}, post(request{host: "[::1]:8081"}), 200, ""},
		{"another port", Options{}, post(request{host: "127.0.0.1:9999"}), 403, "forbidden"},
		{"no port", Options{}, post(request{host: "127.0.0.1"}), 403, "forbidden"},
		{"configured name", Options{Hosts: []string{"gw.example"}}, post(request{host: "gw.example:8081", origin: "http://gw.example:8081"}), 200, ""},
		{"configured name with port", Options{Hosts: []string{"gw.example:443"}}, post(request{host: "gw.example:443", origin: "https://gw.example"}), 200, ""},
		{"health through a rebound name", Options{}, request{method: http.MethodGet, target: "/healthz", host: "attacker.example:8081", remote: "127.0.0.1:1"}, 403, "forbidden"},

		{"off loopback without a token configured", Options{}, post(request{remote: "192.0.2.7:5000"}), 403, "forbidden"},
		{"off loopback without the token", Options{Token: "s3cret"}, post(request{remote: "192.0.2.7:5000"}), 401, "unauthorized"},
		{"off loopback with a wrong token", Options{Token: "s3cret"}, post(request{remote: "192.0.2.7:5000", auth: "Bearer nope"}), 401, "unauthorized"},
		{"off loopback with the token", Options{Token: "s3cret"}, post(request{remote: "192.0.2.7:5000", auth: "Bearer s3cret"}), 200, ""},
		{"loopback needs no token", Options{Token: "s3cret"}, post(request{}), 200, ""},

		{"any address: an IP literal", Options{Listen: "0.0.0.0:8081", Token: "t"}, post(request{host: "10.1.2.3:8081"}), 200, ""},
		{"any address: a name", Options{Listen: "0.0.0.0:8081", Token: "t"}, post(request{host: "attacker.example:8081"}), 403, "forbidden"},
		{"one address: itself", Options{Listen: "10.1.2.3:8081", Token: "t"}, post(request{host: "10.1.2.3:8081", remote: "10.1.2.4:1", auth: "Bearer t"}), 200, ""},
		{"one address: localhost", Options{Listen: "10.1.2.3:8081", Token: "t"}, post(request{host: "localhost:8081"}), 403, "forbidden"},

		// Mounted in the console, whose own guard has checked these.
		{"mounted: the console's host", Options{Mounted: true}, post(request{host: "127.0.0.1:8080", origin: "http://127.0.0.1:8080"}), 200, ""},
		{"mounted: still JSON only", Options{Mounted: true}, post(request{contentType: "text/plain"}), 415, "unsupported_media_type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeInvoker{}
			tt.opts.Invoker, tt.opts.Logger = f, quietLogger()
			s := newServer(tt.opts)
			r := tt.req
			req := httptest.NewRequest(r.method, r.target, strings.NewReader(`["x"]`))
			req.Host, req.RemoteAddr = r.host, r.remote
			for k, v := range map[string]string{"Content-Type": r.contentType, "Origin": r.origin, "Authorization": r.auth} {
				if v != "" {
					req.Header.Set(k, v)
				}
			}
			status, out, hdr := send(t, s.Handler(), req)
			e, _ := out["error"].(map[string]any)
			if status != tt.status || (tt.kind != "" && e["kind"] != tt.kind) {
				t.Fatalf("got %d %v, want %d %s", status, out, tt.status, tt.kind)
			}
			if tt.status != 200 && r.method == http.MethodPost && f.lastInvocation() != nil {
				t.Error("a refused request reached the invoker")
			}
			if tt.status == 401 && hdr.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
}

// A mounted gateway is served by the server that mounts it, never alone.
func TestStartMountedRefused(t *testing.T) {
	s := New(Options{Listen: "127.0.0.1:0", Invoker: &fakeInvoker{}, Logger: quietLogger(), Mounted: true})
	if err := s.Start(); err == nil {
		s.Shutdown(context.Background())
		t.Fatal("a mounted gateway started listening on its own, without its guard")
	}
}

// The gateway will not listen beyond loopback without a token.
func TestStartOffLoopbackNeedsToken(t *testing.T) {
	for _, listen := range []string{"0.0.0.0:0", ":0", "192.0.2.1:0"} {
		s := New(Options{Listen: listen, Invoker: &fakeInvoker{}, Logger: quietLogger()})
		err := s.Start()
		if err == nil {
			s.Shutdown(context.Background())
			t.Fatalf("Start on %s without a token succeeded", listen)
		}
		if !strings.Contains(err.Error(), "consumer.gateway.token") {
			t.Errorf("Start on %s: %v; want the error to name consumer.gateway.token", listen, err)
		}
	}
}

// ?timeout= is each attempt's timeout, carried as Dubbo's timeout
// attachment; before, it only bounded the whole call, and each attempt
// still gave up after the default 1s.
func TestTimeoutIsTheAttachment(t *testing.T) {
	f := &fakeInvoker{answer: func(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
		return &rpc.Result{Value: inv.Attachment("timeout")}, nil
	}}
	s := newServer(Options{Invoker: f, Logger: quietLogger()})
	for query, want := range map[string]string{"timeout=3s": `{"result":"3000"}`, "timeout=2500": `{"result":"2500"}`, "": `{"result":""}`} {
		status, out, _ := do(t, s.Handler(), http.MethodPost, "/invoke/org.example.Greeter/sleep?types=int&"+query, `[2500]`)
		if got, _ := json.Marshal(out); status != 200 || string(got) != want {
			t.Errorf("%s: got %d %s, want %s", query, status, got, want)
		}
		if f.lastHadDeadline() {
			t.Errorf("%s: the gateway bounded the whole call; the timeout is per attempt", query)
		}
	}
}

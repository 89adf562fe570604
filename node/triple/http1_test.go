package triple

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/dubbo-lab/dubbo/internal/testkit/h2raw"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// post makes a unary HTTP/1.1 call.
func post(t *testing.T, url, contentType string, body []byte, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ProtoMajor != 1 {
		t.Errorf("answered over HTTP/%d", resp.ProtoMajor)
	}
	return resp, b
}

// A unary call over HTTP/1.1, in JSON and in proto: the body reaches the
// handler with the call's metadata, the answer comes back in the same
// encoding with trailer metadata as Trailer- headers.
func TestHTTP1Unary(t *testing.T) {
	calls := make(chan Call, 2)
	h := router{"greet.Greeter/Greet": unaryFunc(func(_ context.Context, c *Call, req []byte) ([]byte, rpc.Metadata, *Status) {
		calls <- *c
		return append([]byte("hello "), req...), rpc.Metadata{{Key: "x-answer", Value: "42"}}, nil
	})}
	_, addr := start(t, Config{}, h)
	for _, c := range []struct{ contentType, codec string }{{"application/json", "json"}, {"application/proto", "proto"}} {
		t.Run(c.codec, func(t *testing.T) {
			resp, body := post(t, "http://"+addr+"/greet.Greeter/Greet", c.contentType, []byte(`"world"`),
				"Tri-Service-Version", "1.0.0", "X-Id-Bin", "AAE")
			if resp.StatusCode != http.StatusOK || string(body) != `hello "world"` {
				t.Errorf("%d %q", resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != c.contentType {
				t.Errorf("Content-Type %q, want %q", ct, c.contentType)
			}
			if v := resp.Header.Get("Trailer-X-Answer"); v != "42" {
				t.Errorf("Trailer-X-Answer = %q", v)
			}
			call := <-calls
			if call.Service != "greet.Greeter" || call.Method != "Greet" || call.Codec != c.codec || !call.HTTP1 {
				t.Errorf("call = %+v", call)
			}
			if v := call.Header.Get("tri-service-version"); v != "1.0.0" {
				t.Errorf("tri-service-version = %q", v)
			}
			if v := call.Header.Get("x-id-bin"); v != "\x00\x01" {
				t.Errorf("x-id-bin = %q", v)
			}
			if call.Header.Get("content-type") != "" {
				t.Error("Content-Type handed over as metadata")
			}
		})
	}
}

// Errors over HTTP/1.1: the HTTP status of the code (connect's table)
// and a JSON body with the code's name and the message.
func TestHTTP1Errors(t *testing.T) {
	h := hostile(t)
	h["s/NotFound"] = unaryFunc(func(context.Context, *Call, []byte) ([]byte, rpc.Metadata, *Status) {
		return nil, nil, Errorf(NotFound, "no user 7")
	})
	_, addr := start(t, Config{MaxMessage: 100}, h)
	url := "http://" + addr
	for _, c := range []struct {
		name, path, contentType string
		body                    []byte
		header                  []string
		status                  int
		code                    string // "" for no JSON body
	}{
		{"handler status", "/s/NotFound", "application/json", nil, nil, 404, "not_found"},
		{"unknown method", "/s/Nope", "application/json", nil, nil, 404, "unimplemented"},
		{"too large", "/s/Echo", "application/json", bytes.Repeat([]byte("x"), 101), nil, 429, "resource_exhausted"},
		{"deadline", "/s/Wait", "application/json", nil, []string{"Triple-Timeout-Ms", "50"}, 408, "deadline_exceeded"},
		{"bad timeout", "/s/Echo", "application/json", nil, []string{"Triple-Timeout-Ms", "soon"}, 400, "invalid_argument"},
		{"encoding", "/s/Echo", "application/json", nil, []string{"Content-Encoding", "br"}, 404, "unimplemented"},
		{"streaming method", "/s/Ticks", "application/json", nil, nil, 505, "unimplemented"},
		{"content-type", "/s/Echo", "text/plain", nil, nil, 415, ""},
		{"grpc content-type", "/s/Echo", "application/grpc", nil, nil, 415, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, body := post(t, url+c.path, c.contentType, c.body, c.header...)
			if resp.StatusCode != c.status {
				t.Errorf("status %d, want %d (%s)", resp.StatusCode, c.status, body)
			}
			if c.code == "" {
				return
			}
			var e struct{ Code, Message string }
			if err := json.Unmarshal(body, &e); err != nil || e.Code != c.code || e.Message == "" {
				t.Errorf("body %s, want code %q and a message", body, c.code)
			}
		})
	}
	resp, err := http.Get(url + "/s/Echo")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET: %d Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// A gzipped request is inflated for the handler and answered gzipped to a
// client that accepts gzip; a bomb is refused.
func TestHTTP1Gzip(t *testing.T) {
	_, addr := start(t, Config{MaxMessage: 1 << 10}, router{"s/Echo": echo})
	zip := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(b)
		_ = w.Close()
		return buf.Bytes()
	}
	req := []byte(strings.Repeat("z", 500))
	resp, body := post(t, "http://"+addr+"/s/Echo", "application/proto", zip(req), "Content-Encoding", "gzip", "Accept-Encoding", "gzip")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("%d, Content-Encoding %q", resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(zr)
	if string(got) != "echo:"+string(req) {
		t.Errorf("got %d bytes back", len(got))
	}
	resp, _ = post(t, "http://"+addr+"/s/Echo", "application/proto", zip(make([]byte, 1<<20)), "Content-Encoding", "gzip")
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a gzip bomb: %d, want 429 (resource_exhausted)", resp.StatusCode)
	}
}

// x/net's HTTP/2 client (h2c, the transport under dubbo-go's triple
// client) gets the gRPC answer with its trailers, and a trailers-only
// error.
func TestXNetHTTP2Client(t *testing.T) {
	_, addr := start(t, Config{}, router{"s/Echo": echo})
	tr := &http2.Transport{AllowHTTP: true, DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for _, c := range []struct {
		path, status string
		body         []byte
	}{
		{"/s/Echo", "0", h2raw.Frame([]byte("echo:h2c"))},
		{"/s/Nope", "12", nil},
	} {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+c.path, bytes.NewReader(h2raw.Frame([]byte("h2c"))))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/grpc")
		req.Header.Set("Te", "trailers")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		st := resp.Trailer.Get("Grpc-Status")
		if st == "" {
			st = resp.Header.Get("Grpc-Status") // trailers-only
		}
		if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK || st != c.status || !bytes.Equal(body, c.body) {
			t.Errorf("%s: HTTP/%d %d grpc-status %q body %q", c.path, resp.ProtoMajor, resp.StatusCode, st, body)
		}
	}
}

// An HTTP/1.1 request body that stalls is given up after FrameTimeout.
func TestHTTP1StalledBody(t *testing.T) {
	_, addr := start(t, Config{FrameTimeout: 300 * time.Millisecond}, router{"s/Echo": echo})
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := io.WriteString(nc, "POST /s/Echo HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n0123456789"); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(nc)
	if h2raw.IsTimeout(err) {
		t.Fatal("the stalled request's connection is still open")
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("closed after %v", d)
	}
}

// A call that runs longer than FrameTimeout is not cut short by it: the
// timeout bounds the request's arrival, not the handler.
func TestHTTP1LongCall(t *testing.T) {
	h := router{"s/Slow": asyncUnary(func(ctx context.Context, _ *Call, _ []byte) ([]byte, rpc.Metadata, *Status) {
		select {
		case <-time.After(600 * time.Millisecond):
			return []byte("done"), nil, nil
		case <-ctx.Done():
			return nil, nil, Errorf(Canceled, "%v", ctx.Err())
		}
	})}
	_, addr := start(t, Config{FrameTimeout: 200 * time.Millisecond}, h)
	resp, body := post(t, "http://"+addr+"/s/Slow", "application/json", nil)
	if resp.StatusCode != http.StatusOK || string(body) != "done" {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
}

package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/dubbogo"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/jsoncall"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// The consumer half of Triple interop: our consumer calls stock dubbo-go
// v3.3.0 Triple providers (dgprovider -protocol tri): the protobuf service
// greet.GreetService, its request and response messages translated from
// and to JSON with the descriptor dubbo-go's reflection (v1alpha) gives,
// and org.example.Greeter in wrapper mode (hessian2).

const greetService = "greet.GreetService"

// jsonLines yields the given JSON messages, then io.EOF.
func jsonLines(msgs ...string) func() (json.RawMessage, error) {
	return func() (json.RawMessage, error) {
		if len(msgs) == 0 {
			return nil, io.EOF
		}
		m := json.RawMessage(msgs[0])
		msgs = msgs[1:]
		return m, nil
	}
}

// callGreet makes each of greet.GreetService's four methods through cons,
// given in JSON as dubbo call gives them, and checks the answers.
func callGreet(t *testing.T, cons *consumer.Consumer, wantProvider string) {
	t.Helper()
	ctx := testCtx(t)
	quiet := slog.New(slog.DiscardHandler)
	prepare := func(method string, args ...string) *jsoncall.Prepared {
		t.Helper()
		c := jsoncall.Call{Interface: greetService, Method: method, Timeout: 5 * time.Second}
		for _, a := range args {
			c.Args = append(c.Args, json.RawMessage(a))
		}
		p, err := jsoncall.Prepare(ctx, jsoncall.Resolvers{Services: cons}, c, quiet)
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		return p
	}
	stream := func(p *jsoncall.Prepared, requests ...string) string {
		t.Helper()
		var out []string
		err := p.Stream(ctx, cons, jsonLines(requests...), func(js json.RawMessage) error {
			out = append(out, string(js))
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", p.Invocation.Method, err)
		}
		return strings.Join(out, " ")
	}

	p := prepare("Greet", `{"name":"x"}`)
	res, err := jsoncall.Invoke(ctx, cons, p.Invocation)
	if err != nil {
		t.Fatalf("Greet: %v", err)
	}
	if out, err := p.Result(res); err != nil || string(out.(json.RawMessage)) != `{"greeting":"Hello, x"}` || res.Provider != wantProvider {
		t.Errorf("Greet answered %s (%v) from %s, want {\"greeting\":\"Hello, x\"} from %s", out, err, res.Provider, wantProvider)
	}
	if got := stream(prepare("GreetServerStream", `{"name":"x","count":3}`)); got !=
		`{"greeting":"Hello, x #1"} {"greeting":"Hello, x #2"} {"greeting":"Hello, x #3"}` {
		t.Errorf("GreetServerStream: %s", got)
	}
	if got := stream(prepare("GreetClientStream"), `{"name":"a"}`, `{"name":"b"}`, `{"name":"c"}`); got != `{"greeting":"Hello, a,b,c"}` {
		t.Errorf("GreetClientStream: %s", got)
	}
	if got := stream(prepare("GreetStream"), `{"name":"a"}`, `{"name":"b"}`); got != `{"greeting":"Hello, a"} {"greeting":"Hello, b"}` {
		t.Errorf("GreetStream: %s", got)
	}

	// A handler's error is dubbo-go's business error (status 17): a
	// business exception here, not retried.
	_, err = jsoncall.Invoke(ctx, cons, prepare("Greet", `{"name":"fail:boom"}`).Invocation)
	var ex *rpc.Exception
	if !errors.As(err, &ex) || ex.Message != "boom" {
		t.Errorf("Greet(fail:boom): %v, want a business exception with message boom", err)
	}
}

// Our consumer finds dubbo-go's Triple provider in ZooKeeper (embedded and
// Apache) or calls it by url = "tri://...", and calls both of its services.
func TestOurConsumerCallsDubboGoTripleProvider(t *testing.T) {
	dubbogo.Build(t)

	withRegistries(t, func(t *testing.T, zkAddr string) {
		registry := "zookeeper://" + zkAddr
		dg := dubbogo.StartProvider(t, dubbogo.ProviderOptions{Registry: registry, Protocol: "tri"})

		conn := zkConnect(t, zkAddr)
		greetNode := waitNode(t, conn, "/dubbo/"+greetService+"/providers", dg.Addr)
		greeterNode := waitNode(t, conn, providersPath, dg.Addr)
		t.Logf("dgprovider nodes:\n%s\n%s", greetNode, greeterNode)
		if greetNode.Protocol() != "tri" || greeterNode.Protocol() != "tri" || greeterNode.Param("serialization") != "hessian2" {
			t.Errorf("dgprovider nodes %s, %s: want tri:// URLs, the Java interface's with serialization=hessian2", greetNode, greeterNode)
		}

		cons := newConsumer(t, registry)
		callGreet(t, cons, dg.Addr)

		// The Java interface in wrapper mode, with its Go types.
		if _, err := cons.Reference(testCtx(t), consumer.ReferenceConfig{Interface: greeterIface, Version: greeterVersion, Protocol: "tri"}); err != nil {
			t.Fatal(err)
		}
		callAll(t, cons, dg.Addr)
	})

	t.Run("direct", func(t *testing.T) {
		dg := dubbogo.StartProvider(t, dubbogo.ProviderOptions{Protocol: "tri"})
		cons := newConsumer(t, "",
			consumer.ReferenceConfig{Interface: greetService, URL: dg.URL()},
			consumer.ReferenceConfig{Interface: greeterIface, Version: greeterVersion, URL: dg.URL()})
		if err := cons.Start(testCtx(t)); err != nil {
			t.Fatal(err)
		}
		callGreet(t, cons, dg.Addr)
		callAll(t, cons, dg.Addr)
	})
}

// A dubbo-go Triple provider registered at application level only (its
// default) is found through its instance's MetadataInfo, where the
// services are keyed with protocol tri, at the instance's tri endpoint.
func TestOurConsumerFindsDubboGoTripleInstance(t *testing.T) {
	dubbogo.Build(t)
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	registry := "zookeeper://" + zkAddr
	dg := dubbogo.StartProvider(t, dubbogo.ProviderOptions{Registry: registry, Protocol: "tri", RegisterMode: dubbogo.RegisterInstance})
	cons := newConsumer(t, registry)
	callGreet(t, cons, dg.Addr)
}

// dubbo call against dubbo-go's Triple provider, through the registry and
// by url: JSON in and out, the streams printed line by line and fed from
// stdin.
func TestDubboCallAgainstDubboGoTripleProvider(t *testing.T) {
	dubbogo.Build(t)
	bin, _, _ := buildOurs(t)
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	registry := "zookeeper://" + zkAddr
	dg := dubbogo.StartProvider(t, dubbogo.ProviderOptions{Registry: registry, Protocol: "tri"})

	for _, tc := range []struct {
		name, stdin string
		args        []string
		stdout      string // exact; "" when the call must fail
		exit        int
	}{
		{"registry/Greet", "", []string{"--registry", registry, greetService, "Greet", `{"name":"x"}`}, `{"greeting":"Hello, x"}`, 0},
		{"url/Greet", "", []string{"--url", dg.URL(), greetService, "Greet", `{"name":"x"}`}, `{"greeting":"Hello, x"}`, 0},
		{"url/GreetServerStream", "", []string{"--url", dg.URL(), greetService, "GreetServerStream", `{"name":"x","count":2}`},
			"{\"greeting\":\"Hello, x #1\"}\n{\"greeting\":\"Hello, x #2\"}", 0},
		{"registry/GreetStream", "{\"name\":\"a\"}\n{\"name\":\"b\"}\n", []string{"--registry", registry, greetService, "GreetStream"},
			"{\"greeting\":\"Hello, a\"}\n{\"greeting\":\"Hello, b\"}", 0},
		{"url/GreetClientStream", "{\"name\":\"a\"}\n{\"name\":\"b\"}\n", []string{"--url", dg.URL(), greetService, "GreetClientStream"},
			`{"greeting":"Hello, a,b"}`, 0},
		{"url/bad field", "", []string{"--url", dg.URL(), greetService, "Greet", `{"nme":"x"}`}, "", 2},
		{"url/sayHello in wrapper mode", "", []string{"--url", dg.URL(), "--version", greeterVersion, greeterIface, "sayHello", `"world"`}, `"Hello, world"`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			args := append([]string{"call", "--timeout", "5s"}, tc.args...)
			cmd := exec.CommandContext(ctx, bin, args...)
			cmd.Dir = t.TempDir() // no dubbo.toml there
			cmd.Stdin = strings.NewReader(tc.stdin)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			t.Logf("dubbo %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), stdout.String(), stderr.String())
			if code := cmd.ProcessState.ExitCode(); code != tc.exit {
				t.Fatalf("exit %d (%v), want %d", code, err, tc.exit)
			}
			if got := strings.TrimSpace(stdout.String()); tc.exit == 0 && got != tc.stdout {
				t.Errorf("printed %s, want %s", got, tc.stdout)
			}
		})
	}
}

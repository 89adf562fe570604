package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/cluster/mock"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// mockRule is an override rule of the Greeter with one consumer-side item
// setting params, as Dubbo Admin's mock form writes it.
func mockRule(params string) string {
	return "configVersion: v3.0\nscope: service\nkey: \"org.example.Greeter:1.0.0:\"\nenabled: true\nconfigs:\n" +
		"  - side: consumer\n    enabled: true\n    parameters:\n" + params
}

// Every mock form, set by an override rule in the config center on a
// running consumer of a real provider: what answers, whether the provider
// is called, and what the consumer's statistics count.
func TestMockForms(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	var calls counter
	p := startProvider(t, zkAddr, provider.Config{}, &calls)
	ref := greeterRef()
	c, logs := loggedConsumer(t, zkAddr, ref)
	admin := ruleAdmin(t, zkAddr)
	hello := call("sayHello", []string{"java.lang.String"}, "bob")
	add := call("add", []string{"int", "int"}, int32(1), int32(2))
	echoMap := call("echoMap", []string{"java.util.Map"}, map[string]any{"k": "v"})
	fail := call("fail", []string{"java.lang.String"}, "boom")
	sleep := call("sleep", []string{"int"}, int32(300))

	type answer struct {
		value    any
		provider string // "mock", or "" for the real provider
		class    string // the business exception's class
		kind     error  // the error's category
	}
	tests := []struct {
		name, params string
		inv          *rpc.Invocation
		want         answer
		calls        bool // the provider is called
	}{
		{"force:return a string", "      sayHello.mock: force:return hi\n", hello, answer{value: "hi", provider: mock.Provider}, false},
		{"force:return an int", "      add.mock: force:return 40\n", add, answer{value: int32(40), provider: mock.Provider}, false},
		{"force:return a quoted int", "      add.mock: 'force:return \"41\"'\n", add, answer{value: int32(41), provider: mock.Provider}, false},
		{"force:return empty Map", "      echoMap.mock: force:return empty\n", echoMap, answer{value: map[any]any{}, provider: mock.Provider}, false},
		{"force:return empty String", "      sayHello.mock: force:return empty\n", hello, answer{value: "", provider: mock.Provider}, false},
		{"force:return null", "      sayHello.mock: force:return null\n", hello, answer{value: nil, provider: mock.Provider}, false},
		{"force:return JSON", "      echoMap.mock: 'force:return {\"a\": 1, b: [true]}'\n", echoMap,
			answer{value: map[any]any{"a": int32(1), "b": []any{true}}, provider: mock.Provider}, false},
		{"the reference's mock for every method", "      mock: force:return 7\n", add, answer{value: int32(7), provider: mock.Provider}, false},
		{"a method's wins over the reference's", "      mock: force:return 7\n      add.mock: fail:return 8\n", add, answer{value: int32(3)}, true},
		{"force:throw a class", "      sayHello.mock: force:throw org.example.Oops\n", hello, answer{class: "org.example.Oops", provider: mock.Provider}, false},
		{"force:throw", "      sayHello.mock: force:throw\n", hello, answer{kind: rpc.ErrProvider}, false},
		{"fail:return with the provider up", "      sayHello.mock: fail:return hi\n", hello, answer{value: "Hello, bob"}, true},
		{"fail:return keeps business exceptions", "      fail.mock: fail:return hi\n", fail, answer{class: "java.lang.IllegalStateException"}, true},
		{"fail:return after timeouts", "      sleep.timeout: 50\n      sleep.mock: fail:return woke\n", sleep, answer{value: "woke", provider: mock.Provider}, true},
		{"return is fail:return", "      sleep.timeout: 50\n      sleep.mock: return woke\n", sleep, answer{value: "woke", provider: mock.Provider}, true},
		{"fail:throw after timeouts", "      sleep.timeout: 50\n      sleep.mock: fail:throw\n", sleep, answer{kind: rpc.ErrProvider}, true},
		{"mock=true is not applied", "      mock: \"true\"\n", hello, answer{value: "Hello, bob"}, true},
	}
	check := func(res *rpc.Result, err error, want answer) error {
		switch {
		case want.kind != nil:
			if !errors.Is(err, want.kind) || !strings.Contains(err.Error(), mock.Mocked) {
				return fmt.Errorf("error %v, want %v with %q", err, want.kind, mock.Mocked)
			}
			return nil
		case err != nil:
			return err
		case want.class != "":
			if res.Exception == nil || res.Exception.Class != want.class {
				return fmt.Errorf("answer %+v, want exception %s", res, want.class)
			}
		case !reflect.DeepEqual(res.Value, want.value):
			return fmt.Errorf("answer %#v, want %#v", res.Value, want.value)
		}
		if (want.provider == mock.Provider) != (res.Provider == mock.Provider) {
			return fmt.Errorf("answered by %q, want %q", res.Provider, want.provider)
		}
		return nil
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := admin.PublishConfig(testCtx(t), greeterRuleKey, mockRule(tt.params)); err != nil {
				t.Fatal(err)
			}
			var last error
			waitFor(t, "the rule in force", func() bool {
				res, err := c.Invoke(testCtx(t), tt.inv)
				last = check(res, err, tt.want)
				return last == nil
			})
			calls.reset()
			collect(c.Stats(), nil) // what the wait counted
			for range 5 {
				res, err := c.Invoke(testCtx(t), tt.inv)
				if err := check(res, err, tt.want); err != nil {
					t.Fatal(err)
				}
			}
			if called := calls.get(p.Addr()) > 0; called != tt.calls {
				t.Errorf("the provider served %d calls, want calls %v", calls.get(p.Addr()), tt.calls)
			}
			// As Java counts: a forced answer nowhere, a failed call as
			// failed, the answer that replaced it not at all.
			got := collect(c.Stats(), nil)[methodPeer{tt.inv.Method, p.Addr()}]
			switch {
			case !tt.calls && got != (totals{}):
				t.Errorf("forced answers counted %+v, want nothing", got)
			case tt.want.provider == mock.Provider && tt.calls && (got.failure == 0 || got.success != 0):
				t.Errorf("failed calls answered by the mock counted %+v, want failures only", got)
			case tt.want.provider != mock.Provider && tt.calls && got.success+got.failure == 0:
				t.Errorf("calls to the provider not counted")
			}
		})
	}
	// The last rule, mock=true, lets calls through as any rule would before
	// it arrives: its sign is the log line.
	waitFor(t, "mock=true logged as not applied", func() bool {
		if _, err := c.Invoke(testCtx(t), hello); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(logs.String(), "mock setting not applied") && strings.Contains(logs.String(), "Java classes")
	})

	// A generic call (the gateway's, dubbo call's, a plugin's) takes the
	// mock of the method it invokes.
	if err := admin.PublishConfig(testCtx(t), greeterRuleKey, mockRule("      add.mock: force:return 99\n")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a generic call mocked", func() bool {
		v, err := c.Generic(testCtx(t), consumer.GenericCall{Interface: providertest.GreeterInterface,
			Version: providertest.GreeterVersion, Method: "add", Types: []string{"int", "int"}, Args: []any{int32(1), int32(2)}})
		return err == nil && v == int32(99)
	})

	// The rule removed, calls go to the provider again.
	if err := admin.DeleteConfig(testCtx(t), greeterRuleKey); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the mock gone", func() bool {
		res, err := c.Invoke(testCtx(t), add)
		return err == nil && res.Value == int32(3) && res.Provider == p.Addr()
	})
}

// A mock in the consumer's config: per method, in parameters; mock=true
// and class names are refused at start with what to write instead.
func TestMockConfigured(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	startProvider(t, zkAddr, provider.Config{}, nil)
	ref := greeterRef()
	ref.Methods = []consumer.MethodConfig{{Name: "add", Parameters: map[string]string{"mock": "force:return 5"}}}
	c := newConsumer(t, zkAddr, ref)
	res, err := c.Invoke(testCtx(t), call("add", []string{"int", "int"}, int32(1), int32(2)))
	if err != nil || res.Value != int32(5) || res.Provider != mock.Provider {
		t.Fatalf("add with force:return 5: %+v, %v", res, err)
	}
	if err := sayHello(c, testCtx(t)); err != nil {
		t.Fatalf("sayHello, not mocked: %v", err)
	}

	for _, params := range []map[string]string{{"mock": "true"}, {"sayHello.mock": "org.example.GreeterMock"}} {
		bad := greeterRef()
		bad.Parameters = params
		_, err := consumer.New(testCtx(t), consumer.Config{Application: "x", References: []consumer.ReferenceConfig{bad}}, consumer.Options{})
		if !errors.Is(err, mock.ErrUnsupported) || !strings.Contains(err.Error(), "consumer.references[0].parameters") ||
			!strings.Contains(err.Error(), "force:return <value>") {
			t.Errorf("mock %v: error %v, want the key, ErrUnsupported and what to write", params, err)
		}
	}
}

// fail:return while the only provider is killed -9 under load: not one
// call fails. Calls answered before the kill come from the provider, after
// it from the mock.
func TestMockFailReturnProviderKilled(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	p := startChildProvider(t, zkAddr)
	ref := greeterRef()
	c := newConsumer(t, zkAddr, ref)
	admin := ruleAdmin(t, zkAddr)
	// sleep, timed out and mocked too, shows when the rule is in force.
	rule := mockRule("      sayHello.mock: fail:return fallback\n      sleep.timeout: 20\n      sleep.mock: fail:return probe\n")
	if err := admin.PublishConfig(testCtx(t), greeterRuleKey, rule); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rule in force", func() bool {
		res, err := c.Invoke(testCtx(t), call("sleep", []string{"int"}, int32(100)))
		return err == nil && res.Value == "probe"
	})

	ctx, stop := context.WithTimeout(context.Background(), 3*time.Second)
	defer stop()
	var real, mocked, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20000 && ctx.Err() == nil; i++ {
				res, err := c.Invoke(testCtx(t), call("sayHello", []string{"java.lang.String"}, "bob"))
				switch {
				case err != nil:
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				case res.Provider == mock.Provider && res.Value == "fallback":
					mocked.Add(1)
				case res.Value == "Hello, bob":
					real.Add(1)
				default:
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Errorf("answer %+v", res))
				}
			}
		}()
	}
	time.Sleep(time.Second)
	p.Kill(t)
	killedAt := real.Load()
	wg.Wait()
	t.Logf("%d calls answered by the provider (%d before the kill), %d by the mock, %d failed", real.Load(), killedAt, mocked.Load(), failed.Load())
	if failed.Load() != 0 {
		t.Fatalf("%d calls failed, first: %v", failed.Load(), firstErr.Load())
	}
	if killedAt == 0 || mocked.Load() == 0 {
		t.Fatal("want calls answered by the provider before the kill and by the mock after it")
	}
}

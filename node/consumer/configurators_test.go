package consumer_test

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/syncbuf"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"

	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// greeterRuleKey is the config-center key of the Greeter's override rules.
const greeterRuleKey = "org.example.Greeter:1.0.0:.configurators"

// ruleAdmin publishes config-center documents as an operator would.
func ruleAdmin(t *testing.T, zkAddr string) *zookeeper.Registry {
	t.Helper()
	r, err := zookeeper.New(url.MustParse("zookeeper://"+zkAddr), zookeeper.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// loggedConsumer is newConsumer with its log kept.
func loggedConsumer(t *testing.T, zkAddr string, ref consumer.ReferenceConfig) (*consumer.Consumer, *syncbuf.Buffer) {
	t.Helper()
	logs := &syncbuf.Buffer{}
	c, err := consumer.New(testCtx(t), consumer.Config{Application: "greeter-consumer", Registry: "zookeeper://" + zkAddr,
		References: []consumer.ReferenceConfig{ref}}, consumer.Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.Start(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	return c, logs
}

// startWarmProvider is startProvider for a provider already warmed up
// (warmup=0), so that its weight counts in full from the start.
func startWarmProvider(t *testing.T, zkAddr string, calls *counter) *provider.Provider {
	t.Helper()
	p, err := provider.Start(testCtx(t), provider.Config{Application: "greeter-app", Registry: "zookeeper://" + zkAddr,
		Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}}, provider.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	addr := p.Addr()
	svc := providertest.Greeter(func(*rpc.Invocation) { calls.add(addr) })
	svc.Params = map[string]string{"warmup": "0"}
	if err := p.Export(testCtx(t), svc); err != nil {
		t.Fatal(err)
	}
	return p
}

// providerParams reports the consumer's view of each provider's param, by
// address ("" when absent); disabled providers are missing.
func providerParams(t *testing.T, c *consumer.Consumer, ref consumer.ReferenceConfig, param string) map[string]string {
	t.Helper()
	r, err := c.Reference(testCtx(t), ref)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string)
	for _, p := range r.Providers() {
		out[p.URL().Address()] = p.URL().Param(param)
	}
	return out
}

// split makes n sayHello calls and returns how many each provider served.
func split(t *testing.T, c *consumer.Consumer, calls *counter, n int, a, b string) (int, int) {
	t.Helper()
	calls.reset()
	for i := 0; i < n; i++ {
		if err := sayHello(c, testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	return calls.get(a), calls.get(b)
}

// TestConsumerOverrideRules changes the weights of a running consumer's
// providers, disables one, and restores them, with config-center rules.
func TestConsumerOverrideRules(t *testing.T) {
	zktest.Both(t, func(t *testing.T, zkAddr string) {
		var calls counter
		pa := startWarmProvider(t, zkAddr, &calls)
		pb := startWarmProvider(t, zkAddr, &calls)
		a, b := pa.Addr(), pb.Addr()
		ref := greeterRef()
		ref.LoadBalance = "roundrobin"
		c, logs := loggedConsumer(t, zkAddr, ref)
		admin := ruleAdmin(t, zkAddr)
		weights := func(want map[string]string) func() bool {
			return func() bool {
				got := providerParams(t, c, ref, "weight")
				return fmt.Sprint(got) == fmt.Sprint(want)
			}
		}
		waitFor(t, "two providers", weights(map[string]string{a: "", b: ""}))
		if na, nb := split(t, c, &calls, 100, a, b); na != 50 || nb != 50 {
			t.Fatalf("without rules: %d:%d, want 50:50", na, nb)
		}

		weightRule := fmt.Sprintf(`configVersion: v3.0
scope: service
key: "org.example.Greeter:1.0.0:"
configs:
  - side: consumer
    providerAddresses: [%q]
    parameters:
      weight: 400
`, a)
		if err := admin.PublishConfig(testCtx(t), greeterRuleKey, weightRule); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "A at weight 400", weights(map[string]string{a: "400", b: ""}))
		if na, nb := split(t, c, &calls, 100, a, b); na < 75 || na > 85 || na+nb != 100 {
			t.Fatalf("A at weight 400, B at 100: %d:%d, want about 80:20", na, nb)
		}

		// A rule that does not parse is logged and changes nothing.
		if err := admin.PublishConfig(testCtx(t), greeterRuleKey, "configVersion: v3.0\nscope: service\nkey: org.example.Greeter\nconfigs:\n  - side: consumer\n"); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the invalid rule logged", func() bool {
			return strings.Contains(logs.String(), "ignoring invalid override rule")
		})
		if na, nb := split(t, c, &calls, 100, a, b); na < 75 || na > 85 || na+nb != 100 {
			t.Fatalf("after an invalid rule: %d:%d, want the previous rule's 80:20", na, nb)
		}

		disableB := weightRule + fmt.Sprintf(`  - side: consumer
    providerAddresses: [%q]
    parameters:
      disabled: true
`, b)
		if err := admin.PublishConfig(testCtx(t), greeterRuleKey, disableB); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "B disabled", weights(map[string]string{a: "400"}))
		if na, nb := split(t, c, &calls, 20, a, b); na != 20 || nb != 0 {
			t.Fatalf("B disabled: %d:%d, want 20:0", na, nb)
		}

		if err := admin.DeleteConfig(testCtx(t), greeterRuleKey); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "rules gone", weights(map[string]string{a: "", b: ""}))
		if na, nb := split(t, c, &calls, 100, a, b); na != 50 || nb != 50 {
			t.Fatalf("rule removed: %d:%d, want 50:50", na, nb)
		}
	})
}

// TestConsumerTimeoutOverride gives one method a timeout shorter than the
// call takes, then takes it away.
func TestConsumerTimeoutOverride(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	pa := startProvider(t, zkAddr, provider.Config{}, nil)
	ref := greeterRef()
	c := newConsumer(t, zkAddr, ref)
	admin := ruleAdmin(t, zkAddr)
	sleep := func() error {
		res, err := c.Invoke(testCtx(t), call("sleep", []string{"int"}, int32(200)))
		if err == nil && res.Value != "slept" {
			err = fmt.Errorf("sleep(200) = %#v", res.Value)
		}
		return err
	}
	if err := sleep(); err != nil {
		t.Fatalf("without a rule (timeout 1s): %v", err)
	}

	rule := `configVersion: v3.0
scope: service
key: "org.example.Greeter:1.0.0:"
configs:
  - side: consumer
    parameters:
      sleep.timeout: 50
`
	if err := admin.PublishConfig(testCtx(t), greeterRuleKey, rule); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "sleep.timeout=50", func() bool {
		return providerParams(t, c, ref, "sleep.timeout")[pa.Addr()] == "50"
	})
	if err := sleep(); !errors.Is(err, rpc.ErrTimeout) {
		t.Fatalf("sleep(200) with a 50ms timeout: %v, want %v", err, rpc.ErrTimeout)
	}
	if err := sayHello(c, testCtx(t)); err != nil {
		t.Fatalf("other methods keep their timeout: %v", err)
	}

	if err := admin.DeleteConfig(testCtx(t), greeterRuleKey); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "rule gone", func() bool {
		return providerParams(t, c, ref, "sleep.timeout")[pa.Addr()] == ""
	})
	if err := sleep(); err != nil {
		t.Fatalf("rule removed: %v", err)
	}
}

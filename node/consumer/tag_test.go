package consumer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/embeddedzk"
	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/internal/testkit/zktest"
	"github.com/dubbo-lab/dubbo/node/cluster/router"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// startTaggedProvider is startProvider for a provider whose URL carries the
// static tag dubbo.tag=tag ("" for none).
func startTaggedProvider(t *testing.T, zkAddr, tag string, calls *counter) *provider.Provider {
	t.Helper()
	p, err := provider.Start(testCtx(t), provider.Config{Application: "greeter-app", Registry: "zookeeper://" + zkAddr,
		Protocol: provider.ProtocolConfig{Host: "127.0.0.1", Port: -1}}, provider.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	addr := p.Addr()
	svc := providertest.Greeter(func(*rpc.Invocation) { calls.add(addr) })
	if tag != "" {
		svc.Params = map[string]string{router.KeyTag: tag}
	}
	if err := p.Export(testCtx(t), svc); err != nil {
		t.Fatal(err)
	}
	return p
}

// taggedHello is sayHello with the request tag and dubbo.force.tag
// attachments ("" leaves one out).
func taggedHello(tag, force string) *rpc.Invocation {
	inv := call("sayHello", []string{"java.lang.String"}, "tag")
	if tag != "" {
		inv.SetAttachment(router.KeyTag, tag)
	}
	if force != "" {
		inv.SetAttachment(router.KeyForceTag, force)
	}
	return inv
}

// Tag routing through a consumer, as Java's TagStateRouter: a tagged call
// goes to the providers of its tag, an untagged one to untagged providers,
// a tag nobody has falls back to untagged providers unless
// dubbo.force.tag=true, and a tag rule in the config center groups
// providers by address.
func TestTagRouting(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	var calls counter
	gray := startTaggedProvider(t, zkAddr, "gray", &calls).Addr()
	plain := startTaggedProvider(t, zkAddr, "", &calls).Addr()
	c := newConsumer(t, zkAddr, greeterRef())
	// Routing chooses among the listed providers: an untagged call before
	// the untagged provider is listed finds none.
	waitProviders(t, c, greeterRef(), 2)

	tests := []struct {
		name, tag, force string
		want             string // the provider that answers; "" for no provider
	}{
		{"untagged call", "", "", plain},
		{"static tag", "gray", "", gray},
		{"unknown tag falls back to untagged", "blue", "", plain},
		{"unknown tag with dubbo.force.tag", "blue", "true", ""},
		{"known tag with dubbo.force.tag", "gray", "true", gray},
	}
	check := func(t *testing.T, tag, force, want string) {
		t.Helper()
		for range 10 {
			calls.reset()
			_, err := c.Invoke(testCtx(t), taggedHello(tag, force))
			switch {
			case want == "" && !errors.Is(err, rpc.ErrNoProvider):
				t.Fatalf("got %v (calls %v), want no_provider", err, calls.m)
			case want == "":
			case err != nil:
				t.Fatal(err)
			case calls.get(want) != 1:
				t.Fatalf("answered by %v, want %s", calls.m, want)
			}
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, tt.tag, tt.force, tt.want) })
	}

	// A rule puts the untagged provider in group "canary". An untagged call
	// then goes to the providers in no group and without a static tag, as
	// in Java 3.3: there are none (earlier Java let it reach providers whose
	// static tag names no group of the rule).
	admin := ruleAdmin(t, zkAddr)
	rule := fmt.Sprintf("configVersion: v3.0\nforce: false\nenabled: true\nkey: greeter-app\ntags:\n  - name: canary\n    addresses: [%q]\n", plain)
	if err := admin.PublishConfig(testCtx(t), "greeter-app.tag-router", rule); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the tag rule", func() bool { // until then, forced "canary" finds no provider
		calls.reset()
		_, err := c.Invoke(testCtx(t), taggedHello("canary", "true"))
		return err == nil && calls.get(plain) == 1
	})
	t.Run("rule group", func(t *testing.T) { check(t, "canary", "", plain) })
	t.Run("static tag beside a rule", func(t *testing.T) { check(t, "gray", "", gray) })
	t.Run("untagged call beside a rule", func(t *testing.T) { check(t, "", "", "") })
}

// slowTagRules is a registry whose config center takes a while to deliver
// tag rules, as a distant ZooKeeper would.
type slowTagRules struct{ *zookeeper.Registry }

func (s slowTagRules) Watch(ctx context.Context, key string, fn zookeeper.ConfigFunc) (func(), error) {
	if strings.HasSuffix(key, ".tag-router") {
		time.Sleep(100 * time.Millisecond)
	}
	return s.Registry.Watch(ctx, key, fn)
}

// A tag rule written before a consumer starts routes its very first call,
// through the gateway's and plugins' on-demand references and through a
// reference waited for with WaitAvailable (dubbo call, dubbo bench): the
// consumer waits until the rule of the providers' application is read, as
// Java's TagStateRouter reads it on first seeing the providers. Before, the
// rule's watch was armed after the providers were listed, and a first call
// made meanwhile went by static tags alone, to either provider.
func TestTagRuleRoutesFirstCall(t *testing.T) {
	zkAddr := zktest.StartEmbedded(t, embeddedzk.Config{})
	var calls counter
	canary := startTaggedProvider(t, zkAddr, "", &calls).Addr()
	startTaggedProvider(t, zkAddr, "", &calls)
	admin := ruleAdmin(t, zkAddr)
	rule := fmt.Sprintf("configVersion: v3.0\nkey: greeter-app\ntags:\n  - name: canary\n    addresses: [%q]\n", canary)
	if err := admin.PublishConfig(testCtx(t), "greeter-app.tag-router", rule); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		calls.reset()
		c, err := consumer.New(testCtx(t), consumer.Config{Application: "greeter-consumer"},
			consumer.Options{Registry: slowTagRules{ruleAdmin(t, zkAddr)}, Logger: quietLogger()})
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			check := false
			ref := greeterRef()
			ref.Check = &check
			r, err := c.Reference(testCtx(t), ref)
			if err != nil {
				t.Fatal(err)
			}
			if !r.WaitAvailable(testCtx(t), 3*time.Second) {
				t.Fatal("WaitAvailable: no provider, or the tag rule not read, within 3s")
			}
		}
		if _, err := c.Invoke(testCtx(t), taggedHello("canary", "")); err != nil {
			t.Fatal(err)
		}
		c.Close()
		if calls.get(canary) != 1 {
			t.Fatalf("consumer %d: its first call tagged canary was answered by %v, want %s (the rule's group)", i, calls.m, canary)
		}
	}
}

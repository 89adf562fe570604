package consumer_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/providertest"
	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/provider"
)

// A provider that is listed but takes longer than the caller's wait to
// accept a connection (a busy machine) is still waited for, up to the
// check's connect timeout: `dubbo call` and `dubbo bench` wait a second,
// and before, their first calls then failed with no provider (14,168 of a
// bench's calls on a loaded machine).
func TestWaitAvailableOutlastsASlowFirstConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens there until the provider starts

	ref := greeterRef()
	ref.URL = fmt.Sprintf("dubbo://127.0.0.1:%d", port)
	c, err := consumer.New(testCtx(t), consumer.Config{Application: "greeter-consumer", References: []consumer.ReferenceConfig{ref}},
		consumer.Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r, err := c.Reference(testCtx(t), ref)
	if err != nil {
		t.Fatal(err)
	}

	started := make(chan *provider.Provider, 1)
	go func() {
		time.Sleep(1100 * time.Millisecond) // past WaitAvailable's 1s, listening before the redial at about 1.5s
		cfg := provider.Config{Application: "greeter-app"}
		cfg.Protocol.Host, cfg.Protocol.Port = "127.0.0.1", port
		p, err := provider.Start(testCtx(t), cfg, provider.Options{Logger: quietLogger()})
		if err != nil {
			t.Error(err)
			started <- nil
			return
		}
		if err := p.Export(testCtx(t), providertest.Greeter(nil)); err != nil {
			t.Error(err)
		}
		started <- p
	}()
	t.Cleanup(func() {
		if p := <-started; p != nil {
			p.Close()
		}
	})

	if !r.WaitAvailable(testCtx(t), time.Second) {
		t.Fatal("WaitAvailable(1s) gave up on a listed provider that accepts after 1.1s")
	}
	if _, err := c.Invoke(testCtx(t), sayHelloTo("late")); err != nil {
		t.Fatalf("first call after the wait: %v", err)
	}
}

package interop

import (
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/internal/testkit/dubbogo"
	"github.com/dubbo-lab/dubbo/node/provider"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
)

const mappingPath = "/dubbo/mapping/" + greeterIface

// A stock dubbo-go consumer in application-level mode (no registry-type,
// so dubbo-go 3.3.0 subscribes through its service-discovery-registry only)
// finds our provider registered with register-mode instance — no
// /dubbo/<iface>/providers node at all — through the mapping, the
// /services/<app> instance and our MetadataService over dubbo, and calls
// every method. Embedded registry and Apache ZooKeeper; our provider in
// process and as the dubbo binary with the greeter handler plugin.
func TestDubboGoAppLevelConsumerCallsOurProvider(t *testing.T) {
	dubbogo.Build(t)

	withRegistries(t, func(t *testing.T, zkAddr string) {
		registry := "zookeeper://" + zkAddr
		conn := zkConnect(t, zkAddr)

		t.Run("in-process", func(t *testing.T) {
			p := startInstanceModeProvider(t, registry)
			checkAppLevelOnly(t, conn, "interop-applevel", p.Addr())

			results, err := dubbogo.RunConsumer(t, dubbogo.ConsumerOptions{
				Registry: registry, RegisterMode: dubbogo.RegisterInstance, Retries: &noRetries,
			})
			checkDubboGoCalls(t, results, err)
			if n := p.calls.Load(); n != 5 {
				t.Errorf("our handler ran %d times, want 5 (one per call, no retries)", n)
			}
			// dubbo-go learnt the services from our MetadataService.
			var metaCalls int64
			for _, s := range p.Stats().Collect(time.Now()) {
				if s.Interface == provider.MetadataServiceInterface && s.Method == "getMetadataInfo" {
					metaCalls += s.Success + s.Failure
				}
			}
			if metaCalls == 0 {
				t.Errorf("dgconsumer never called %s#getMetadataInfo", provider.MetadataServiceInterface)
			}
			// It did not fall back to interface-level discovery: nothing
			// under /dubbo/<iface>/consumers either.
			if nodes := nodesUnder(t, conn, consumersPath); len(nodes) != 0 {
				t.Errorf("consumer nodes %v: an application-level dgconsumer should write none", nodes)
			}
		})

		t.Run("plugin", func(t *testing.T) {
			p := startPluginProvider(t, registry, "--set", "provider.register-mode=instance")
			checkAppLevelOnly(t, conn, "interop-plugin", p.Addr)
			results, err := dubbogo.RunConsumer(t, dubbogo.ConsumerOptions{
				Registry: registry, RegisterMode: dubbogo.RegisterInstance, Retries: &noRetries,
			})
			checkDubboGoCalls(t, results, err)
		})
	})
}

// startInstanceModeProvider is node/provider serving Greeter, registered
// at application level only.
func startInstanceModeProvider(t *testing.T, registry string) *inProcessProvider {
	t.Helper()
	return startProvider(t, provider.Config{Application: "interop-applevel", Registry: registry, RegisterMode: provider.RegisterInstance})
}

// checkAppLevelOnly waits for app's instance node at addr and its name in
// the interface mapping, and checks that no interface-level provider node
// exists, so that only application-level discovery can find it.
func checkAppLevelOnly(t *testing.T, conn *zk.Conn, app, addr string) {
	t.Helper()
	instPath := "/services/" + app + "/" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		data, _, err := conn.Get(instPath)
		mapping, _, merr := conn.Get(mappingPath)
		if err == nil && merr == nil && containsApp(string(mapping), app) {
			in, perr := metadata.ParseInstance(data)
			if perr != nil {
				t.Fatalf("instance %s: %v\n%s", instPath, perr, data)
			}
			t.Logf("instance %s: %s", instPath, data)
			t.Logf("mapping %s: %s", mappingPath, mapping)
			if in.Meta(metadata.KeyStorageType) != metadata.StorageLocal || in.Revision() == "" || in.Revision() == "0" {
				t.Errorf("instance metadata %v: want storage-type local and a revision", in.Payload.Metadata)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30s: instance %s: %v; mapping %s = %q: %v", instPath, err, mappingPath, mapping, merr)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if nodes := nodesUnder(t, conn, providersPath); len(nodes) != 0 {
		t.Fatalf("providers %v: register-mode instance must write no interface-level node", nodes)
	}
}

func containsApp(mapping, app string) bool {
	for _, a := range strings.Split(mapping, ",") {
		if strings.TrimSpace(a) == app {
			return true
		}
	}
	return false
}

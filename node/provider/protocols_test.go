package provider_test

import (
	"testing"

	"github.com/dubbo-lab/dubbo/node/provider"
)

// dubbo up's replicas take the ports after the configured ones, of every
// protocol (an unset port counts from the protocol's default); a free
// port stays a free port; the config it came from is left as it was.
func TestReplicaPorts(t *testing.T) {
	tri := &provider.ProtocolServer{RegistryPort: 40051}
	cfg := provider.Config{Protocol: provider.ProtocolConfig{Port: 20880, RegistryPort: 30880}, Protocols: provider.Protocols{Tri: tri}}
	for _, tc := range []struct {
		i                                  int
		port, regPort, triPort, triRegPort int
	}{
		{0, 20880, 30880, 50051, 40051},
		{1, 20881, 30881, 50052, 40052},
		{2, 20882, 30882, 50053, 40053},
	} {
		r := cfg.Replica(tc.i)
		if r.Protocol.Port != tc.port || r.Protocol.RegistryPort != tc.regPort || r.Protocols.Tri.Port != tc.triPort || r.Protocols.Tri.RegistryPort != tc.triRegPort {
			t.Errorf("replica %d: dubbo %d (registered %d), tri %d (registered %d); want %d (%d), %d (%d)", tc.i,
				r.Protocol.Port, r.Protocol.RegistryPort, r.Protocols.Tri.Port, r.Protocols.Tri.RegistryPort, tc.port, tc.regPort, tc.triPort, tc.triRegPort)
		}
	}
	if tri.Port != 0 || tri.RegistryPort != 40051 || cfg.Protocol.Port != 20880 {
		t.Errorf("Replica changed the config it came from: %+v %+v", cfg.Protocol, tri)
	}
	free := provider.Config{Protocol: provider.ProtocolConfig{Name: "tri", Port: -1}}
	if r := free.Replica(3); r.Protocol.Port != -1 {
		t.Errorf("a free port's replica has port %d, want -1", r.Protocol.Port)
	}
}

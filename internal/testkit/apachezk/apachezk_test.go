package apachezk_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/testkit/apachezk"
)

func TestStartAndCLI(t *testing.T) {
	srv := apachezk.Start(t, apachezk.Options{TickTime: 500 * time.Millisecond})

	out, err := apachezk.FourLetter(srv.Addr(), "srvr", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Zookeeper version: 3.8", "Mode: standalone"} {
		if !strings.Contains(out, want) {
			t.Errorf("srvr output lacks %q:\n%s", want, out)
		}
	}
	out, err = apachezk.FourLetter(srv.Addr(), "conf", 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Session bounds follow the tick: [2, 20] × 500ms.
	for _, want := range []string{"tickTime=500", "minSessionTimeout=1000", "maxSessionTimeout=10000"} {
		if !strings.Contains(out, want) {
			t.Errorf("conf output lacks %q:\n%s", want, out)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err = apachezk.CLI(ctx, t, srv.Addr(), "create /cli hello", "get /cli", "quit")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Created /cli", "\nhello\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("zkCli output lacks %q:\n%s", want, out)
		}
	}
}

func TestEnsembleFailover(t *testing.T) {
	start := time.Now()
	ens := apachezk.StartEnsemble(t, apachezk.EnsembleOptions{Size: 3, TickTime: 200 * time.Millisecond, DisableFsync: true})
	t.Logf("ensemble %s ready in %s", ens.ConnectString(), time.Since(start))

	addrs := strings.Split(ens.ConnectString(), ",")
	if len(addrs) != 3 {
		t.Fatalf("connect string %q, want three hosts", ens.ConnectString())
	}
	leader := ens.Leader()
	for id := 1; id <= ens.Size(); id++ {
		if addrs[id-1] != ens.Addr(id) {
			t.Errorf("connect string host %d = %s, want Addr(%d) = %s", id, addrs[id-1], id, ens.Addr(id))
		}
		mode, err := ens.Mode(id)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{true: "leader", false: "follower"}[id == leader]; mode != want {
			t.Errorf("member %d mode %q, want %q", id, mode, want)
		}
	}

	// Killing the leader leaves a majority, which elects another one.
	killed := time.Now()
	ens.Stop(leader)
	if ens.Running(leader) {
		t.Fatalf("member %d still running after Stop", leader)
	}
	next := ens.Leader()
	if next == leader {
		t.Fatalf("leader is still the killed member %d", leader)
	}
	t.Logf("member %d killed, member %d leads after %s", leader, next, time.Since(killed))

	// The old leader comes back as a follower of the new one.
	ens.Restart(leader)
	if mode, err := ens.Mode(leader); err != nil || mode != "follower" {
		t.Errorf("restarted member %d: mode %q, %v; want follower", leader, mode, err)
	}
	if got := ens.Leader(); got != next {
		t.Errorf("leader after restart %d, want %d", got, next)
	}
}

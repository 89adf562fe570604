package apachezk_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/internal/apachezk"
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

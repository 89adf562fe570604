package jsoncall

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dubbo-lab/dubbo/node/consumer"
)

// The reference a call goes through: the config's entry for the
// interface, with the settings given laid over it and over the called
// method's settings.
func TestReference(t *testing.T) {
	two, zero := 2, 0
	refs := []consumer.ReferenceConfig{
		{Interface: "a.Greeter", Version: "1.0.0", Settings: consumer.Settings{Timeout: 3 * time.Second, LoadBalance: "leastactive", Retries: &two},
			Methods: []consumer.MethodConfig{{Name: "sayHello", Timeout: 5 * time.Second, Retries: &zero, LoadBalance: "p2c"}, {Name: "other", Retries: &two}}},
		{Interface: "a.Twice", Version: "1"},
		{Interface: "a.Twice", Version: "2"},
		{Interface: "a.Direct", URL: "dubbo://127.0.0.1:20880"},
		{Interface: "a.Grouped", Group: "g"},
	}
	str := func(s string) *string { return &s }
	three, four, quarter := 3, 4, 250*time.Millisecond
	tests := []struct {
		name    string
		s       Settings
		iface   string
		want    consumer.ReferenceConfig
		wantErr bool
	}{
		{"no entry", Settings{Version: str("9")}, "a.Other", consumer.ReferenceConfig{Interface: "a.Other", Version: "9"}, false},
		{"the entry, its version when none is given", Settings{}, "a.Greeter", refs[0], false},
		{"a version that is not the entry's", Settings{Version: str("2.0.0")}, "a.Greeter", consumer.ReferenceConfig{Interface: "a.Greeter", Version: "2.0.0"}, false},
		{"an empty version is a version", Settings{Version: str("")}, "a.Greeter", consumer.ReferenceConfig{Interface: "a.Greeter"}, false},
		{"settings over the entry and the method", Settings{Retries: &three, LoadBalance: str("roundrobin"), Timeout: &quarter, Cluster: str("failfast"), Connections: &four}, "a.Greeter",
			consumer.ReferenceConfig{Interface: "a.Greeter", Version: "1.0.0",
				Settings: consumer.Settings{Timeout: quarter, LoadBalance: "roundrobin", Retries: &three, Cluster: "failfast", Connections: 4},
				Methods:  []consumer.MethodConfig{{Name: "sayHello"}, {Name: "other", Retries: &two}}}, false},
		{"two entries and no version", Settings{}, "a.Twice", consumer.ReferenceConfig{}, true},
		{"the version picks one", Settings{Version: str("2")}, "a.Twice", refs[2], false},
		{"the group picks one", Settings{Group: str("g")}, "a.Grouped", refs[4], false},
		{"another group is a new reference", Settings{Group: str("h")}, "a.Grouped", consumer.ReferenceConfig{Interface: "a.Grouped", Group: "h"}, false},
		{"the entry's direct url", Settings{}, "a.Direct", refs[3], false},
		{"the registry over the entry's url", Settings{Registry: true}, "a.Direct", consumer.ReferenceConfig{Interface: "a.Direct"}, false},
		{"a direct url", Settings{URL: str("dubbo://127.0.0.1:1")}, "a.Other", consumer.ReferenceConfig{Interface: "a.Other", URL: "dubbo://127.0.0.1:1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Reference(refs, tt.iface, "sayHello", tt.s)
			if tt.wantErr {
				if err == nil || !strings.Contains(err.Error(), "2 references to a.Twice") {
					t.Fatalf("error %v, want one naming the references to choose from", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Check == nil || *got.Check {
				t.Errorf("check = %v, want false: a call reports a missing provider itself", got.Check)
			}
			got.Check = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if *refs[0].Methods[0].Retries != 0 || refs[0].Methods[0].LoadBalance != "p2c" || refs[0].Methods[0].Timeout != 5*time.Second {
		t.Error("the settings changed the config's own reference")
	}
}

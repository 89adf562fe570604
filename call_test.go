package main

import (
	"reflect"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/dubbo-lab/dubbo/node/consumer"
)

// The reference dubbo call and dubbo bench use: the config file's entry for
// the interface, with the flags given laid over it and over the called
// method's settings.
func TestCallReference(t *testing.T) {
	two, zero := 2, 0
	refs := []consumer.ReferenceConfig{
		{Interface: "a.Greeter", Version: "1.0.0", Settings: consumer.Settings{Timeout: 3 * time.Second, LoadBalance: "leastactive", Retries: &two},
			Methods: []consumer.MethodConfig{{Name: "sayHello", Timeout: 5 * time.Second, Retries: &zero, LoadBalance: "p2c"}, {Name: "other", Retries: &two}}},
		{Interface: "a.Twice", Version: "1"},
		{Interface: "a.Twice", Version: "2"},
		{Interface: "a.Direct", URL: "dubbo://127.0.0.1:20880"},
	}
	three := 3
	tests := []struct {
		name    string
		args    []string
		iface   string
		want    consumer.ReferenceConfig
		wantErr bool
	}{
		{"no entry", []string{"--version", "9"}, "a.Other", consumer.ReferenceConfig{Interface: "a.Other", Version: "9"}, false},
		{"the entry, its version without --version", nil, "a.Greeter", refs[0], false},
		{"--version that is not the entry's", []string{"--version", "2.0.0"}, "a.Greeter", consumer.ReferenceConfig{Interface: "a.Greeter", Version: "2.0.0"}, false},
		{"flags over the entry and the method", []string{"--retries", "3", "--loadbalance", "roundrobin", "--timeout", "250ms", "--cluster", "failfast", "--connections", "4"}, "a.Greeter",
			consumer.ReferenceConfig{Interface: "a.Greeter", Version: "1.0.0",
				Settings: consumer.Settings{Timeout: 250 * time.Millisecond, LoadBalance: "roundrobin", Retries: &three, Cluster: "failfast", Connections: 4},
				Methods:  []consumer.MethodConfig{{Name: "sayHello"}, {Name: "other", Retries: &two}}}, false},
		{"two entries need --version", nil, "a.Twice", consumer.ReferenceConfig{}, true},
		{"--version picks one", []string{"--version", "2"}, "a.Twice", refs[2], false},
		{"the entry's direct url", nil, "a.Direct", refs[3], false},
		{"--registry over the entry's url", []string{"--registry", "zookeeper://127.0.0.1:2181"}, "a.Direct", consumer.ReferenceConfig{Interface: "a.Direct"}, false},
		{"--url", []string{"--url", "dubbo://127.0.0.1:1"}, "a.Other", consumer.ReferenceConfig{Interface: "a.Other", URL: "dubbo://127.0.0.1:1"}, false},
		{"--url not dubbo://host:port", []string{"--url", "http://x"}, "a.Other", consumer.ReferenceConfig{}, true},
		{"unknown --loadbalance", []string{"--loadbalance", "roundrobbin"}, "a.Other", consumer.ReferenceConfig{}, true},
		{"unknown --cluster", []string{"--cluster", "failfast2"}, "a.Other", consumer.ReferenceConfig{}, true},
		{"negative --retries", []string{"--retries", "-1"}, "a.Other", consumer.ReferenceConfig{}, true},
		{"--connections 0", []string{"--connections", "0"}, "a.Other", consumer.ReferenceConfig{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f callFlags
			cmd := &cobra.Command{}
			f.register(cmd)
			if err := cmd.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			got, err := f.reference(cmd.Flags(), refs, tt.iface, "sayHello")
			if tt.wantErr {
				if exitCode(err) != exitUsage {
					t.Fatalf("error %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Check == nil || *got.Check {
				t.Errorf("check = %v, want false", got.Check)
			}
			got.Check = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
	if *refs[0].Methods[0].Retries != 0 || refs[0].Methods[0].LoadBalance != "p2c" {
		t.Error("flags changed the config's own reference")
	}
}

func TestCallAttachments(t *testing.T) {
	tests := []struct {
		args    []string
		want    map[string]string
		wantErr bool
	}{
		{nil, map[string]string{}, false},
		{[]string{"--attachment", "a=1", "--attachment", "b=x=y", "--attachment", "dubbo.tag=blue", "--tag", "gray", "--timeout", "2s"},
			map[string]string{"a": "1", "b": "x=y", "dubbo.tag": "gray", "timeout": "2000"}, false},
		{[]string{"--attachment", "dubbo.force.tag=true"}, map[string]string{"dubbo.force.tag": "true"}, false},
		{[]string{"--attachment", "novalue"}, nil, true},
		{[]string{"--attachment", "=v"}, nil, true},
	}
	for _, tt := range tests {
		var f callFlags
		cmd := &cobra.Command{}
		f.register(cmd)
		if err := cmd.ParseFlags(tt.args); err != nil {
			t.Fatal(err)
		}
		got, err := f.callAttachments(cmd.Flags())
		if tt.wantErr {
			if exitCode(err) != exitUsage {
				t.Errorf("%v: error %v, want a usage error", tt.args, err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%v: got %v, %v; want %v", tt.args, got, err, tt.want)
		}
	}
}

package main

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dubbo-lab/dubbo/node/jsoncall"
)

// parse parses args as dubbo call's flags.
func parse(t *testing.T, args []string) (*callFlags, *pflag.FlagSet) {
	t.Helper()
	var f callFlags
	cmd := &cobra.Command{}
	f.register(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	return &f, cmd.Flags()
}

// The call settings dubbo call and dubbo bench lay over the config's: the
// flags given, and only those; a value no reference can take is a usage
// error, before anything connects.
func TestCallSettings(t *testing.T) {
	str := func(s string) *string { return &s }
	three, four, zero, quarter := 3, 4, 0, 250*time.Millisecond
	tests := []struct {
		name    string
		args    []string
		want    jsoncall.Settings
		wantErr bool
	}{
		{"none", nil, jsoncall.Settings{}, false},
		{"keys", []string{"--version", "1.0.0", "--group", ""}, jsoncall.Settings{Version: str("1.0.0"), Group: str("")}, false},
		{"settings", []string{"--retries", "3", "--loadbalance", "roundrobin", "--timeout", "250ms", "--cluster", "failfast", "--connections", "4"},
			jsoncall.Settings{Retries: &three, LoadBalance: str("roundrobin"), Timeout: &quarter, Cluster: str("failfast"), Connections: &four}, false},
		{"no retries", []string{"--retries", "0"}, jsoncall.Settings{Retries: &zero}, false},
		{"--registry", []string{"--registry", "zookeeper://127.0.0.1:2181"}, jsoncall.Settings{Registry: true}, false},
		{"--url", []string{"--url", "dubbo://127.0.0.1:1"}, jsoncall.Settings{URL: str("dubbo://127.0.0.1:1")}, false},
		{"--url tri://", []string{"--url", "tri://127.0.0.1:1"}, jsoncall.Settings{URL: str("tri://127.0.0.1:1")}, false},
		{"--url not dubbo:// or tri://host:port", []string{"--url", "http://x"}, jsoncall.Settings{}, true},
		{"unknown --loadbalance", []string{"--loadbalance", "roundrobbin"}, jsoncall.Settings{}, true},
		{"unknown --cluster", []string{"--cluster", "failfast2"}, jsoncall.Settings{}, true},
		{"negative --retries", []string{"--retries", "-1"}, jsoncall.Settings{}, true},
		{"--connections 0", []string{"--connections", "0"}, jsoncall.Settings{}, true},
		{"--timeout under 1ms", []string{"--timeout", "500us"}, jsoncall.Settings{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, fl := parse(t, tt.args)
			got, err := f.settings(fl)
			if tt.wantErr {
				if exitCode(err) != exitUsage {
					t.Fatalf("error %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// The call as the flags and arguments give it: JSON arguments, --types,
// --timeout, and the attachments (--attachment, then --tag).
func TestCallFromFlags(t *testing.T) {
	tests := []struct {
		name    string
		flags   []string
		args    []string
		want    jsoncall.Call
		wantErr bool
	}{
		{"nothing given", nil, nil, jsoncall.Call{Args: []json.RawMessage{}, Attachments: map[string]string{}}, false},
		{"arguments and types", []string{"--types", "int,java.lang.String"}, []string{"2", `"x"`},
			jsoncall.Call{Args: []json.RawMessage{json.RawMessage("2"), json.RawMessage(`"x"`)}, Types: []string{"int", "java.lang.String"}, Attachments: map[string]string{}}, false},
		{"--types empty: resolved", []string{"--types", ""}, nil, jsoncall.Call{Args: []json.RawMessage{}, Attachments: map[string]string{}}, false},
		{"attachments, the tag over them, and the timeout",
			[]string{"--attachment", "a=1", "--attachment", "b=x=y", "--attachment", "dubbo.tag=blue", "--tag", "gray", "--timeout", "2s"}, nil,
			jsoncall.Call{Args: []json.RawMessage{}, Timeout: 2 * time.Second, Attachments: map[string]string{"a": "1", "b": "x=y", "dubbo.tag": "gray"}}, false},
		{"an attachment of the tag router", []string{"--attachment", "dubbo.force.tag=true"}, nil,
			jsoncall.Call{Args: []json.RawMessage{}, Attachments: map[string]string{"dubbo.force.tag": "true"}}, false},
		{"an argument that is not JSON", nil, []string{"world"}, jsoncall.Call{}, true},
		{"a bad type", []string{"--types", "java.util.Map<String"}, []string{"{}"}, jsoncall.Call{}, true},
		{"an attachment without a value", []string{"--attachment", "novalue"}, nil, jsoncall.Call{}, true},
		{"an attachment without a key", []string{"--attachment", "=v"}, nil, jsoncall.Call{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, fl := parse(t, tt.flags)
			got, err := f.call(fl, "org.example.Greeter", "sayHello", tt.args)
			if tt.wantErr {
				if exitCode(err) != exitUsage {
					t.Fatalf("error %v, want a usage error", err)
				}
				return
			}
			tt.want.Interface, tt.want.Method = "org.example.Greeter", "sayHello"
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v, %v\nwant %+v", got, err, tt.want)
			}
		})
	}
}

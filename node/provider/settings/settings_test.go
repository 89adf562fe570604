package settings

import (
	"maps"
	"strings"
	"testing"
	"time"
)

// Params writes each setting under Java's URL parameter name, durations in
// milliseconds, and the fields win over Parameters.
func TestParams(t *testing.T) {
	zero := 0
	tests := []struct {
		name string
		s    Settings
		want map[string]string
	}{
		{"none", Settings{}, map[string]string{}},
		// 0 is a value for these (no warm-up, no calls, no retry), not unset.
		{"zeros", Settings{Weight: &zero, Warmup: new(time.Duration(0)), Retries: &zero, Timeout: 0, Executes: 0},
			map[string]string{"weight": "0", "warmup": "0", "retries": "0"}},
		{"all", Settings{Weight: new(200), Tag: "gray", Timeout: 1500 * time.Millisecond, Retries: &zero, LoadBalance: "leastactive",
			Warmup: new(2 * time.Minute), Token: "secret", Executes: 10, Actives: 3, Delay: 5 * time.Second,
			Parameters: map[string]string{"weight": "1", "sayHello.timeout": "300"}},
			map[string]string{"weight": "200", "dubbo.tag": "gray", "timeout": "1500", "retries": "0", "loadbalance": "leastactive",
				"warmup": "120000", "token": "secret", "executes": "10", "actives": "3", "delay": "5000", "sayHello.timeout": "300"}},
	}
	for _, tt := range tests {
		if got := tt.s.Params(); !maps.Equal(got, tt.want) {
			t.Errorf("%s: Params() = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestCheck(t *testing.T) {
	neg := -1
	tests := []struct {
		s    Settings
		want string
	}{
		{Settings{Weight: new(5), Parameters: map[string]string{"sticky": "true"}}, ""},
		{Settings{Weight: new(-5)}, `parameter weight: "-5" is not a non-negative integer`},
		{Settings{Retries: &neg}, `parameter retries: "-1"`},
		{Settings{Parameters: map[string]string{"interface": "x"}}, "parameter interface: written by the provider"},
		{Settings{Parameters: map[string]string{"a b": "x"}}, `parameter "a b": not a URL parameter name`},
		{Settings{Parameters: map[string]string{"owner": "a&b"}}, "would break the URL"},
		{Settings{Parameters: map[string]string{"sayHello.warmup": "soon"}}, `parameter sayHello.warmup: "soon"`},
	}
	for _, tt := range tests {
		err := tt.s.Check()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v: Check() = %v, want %q", tt.s, err, tt.want)
		}
	}
}

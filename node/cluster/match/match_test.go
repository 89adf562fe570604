package match

import "testing"

func TestString(t *testing.T) {
	tests := []struct {
		m       String
		v       string
		present bool
		want    bool
	}{
		{String{Exact: "a"}, "a", true, true},
		{String{Exact: "a"}, "ab", true, false},
		{String{Exact: "a"}, "", false, false},
		{String{Prefix: "gr"}, "gray", true, true},
		{String{Prefix: "gr"}, "blue", true, false},
		{String{Regex: "v[0-9]+"}, "v12", true, true},
		{String{Regex: "v[0-9]+"}, "xv12", true, false}, // the whole value, as Java's matches
		{String{Wildcard: "*"}, "x", true, true},
		{String{Wildcard: "*"}, "", false, false},
		{String{Wildcard: "x"}, "x", true, true},
		{String{Empty: "true"}, "", false, true},
		{String{Empty: "true"}, "", true, true},
		{String{Empty: "true"}, "x", true, false},
		{String{Noempty: "true"}, "x", true, true},
		{String{Noempty: "true"}, "", true, false},
		{String{Exact: "a", Empty: "true"}, "", false, true}, // an absent value skips to empty, as Java
		{String{}, "a", true, false},
	}
	for _, tt := range tests {
		m := tt.m
		if err := m.Compile(); err != nil {
			t.Fatal(err)
		}
		if got := m.Match(tt.v, tt.present); got != tt.want {
			t.Errorf("%s.Match(%q, %v) = %v, want %v", m, tt.v, tt.present, got, tt.want)
		}
		if got := tt.m.Match(tt.v, tt.present); got != tt.want {
			t.Errorf("uncompiled %s.Match(%q, %v) = %v, want %v", m, tt.v, tt.present, got, tt.want)
		}
	}
	bad := String{Regex: "("}
	if bad.Compile() == nil {
		t.Error("regex ( compiled")
	}
}

func TestParamsAndList(t *testing.T) {
	ps := Params{{Key: "env", Value: String{Exact: "gray"}}, {Key: "zone", Value: String{Noempty: "1"}}}
	params := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	if !ps.Match(params(map[string]string{"env": "gray", "zone": "z1"})) || ps.Match(params(map[string]string{"env": "gray"})) {
		t.Error("Params: all must hold")
	}
	if err := (Params{{Value: String{Exact: "x"}}}).Compile(); err == nil {
		t.Error("a match without a key compiled")
	}
	l := List{Oneof: []String{{Exact: "a"}, {Prefix: "b"}}}
	if !l.Match("bc", true) || l.Match("c", true) {
		t.Error("List: one must hold")
	}
}

func TestAddress(t *testing.T) {
	tests := []struct {
		m    Address
		addr string
		want bool
	}{
		{Address{Cird: "10.0.0.0/24"}, "10.0.0.7", true},
		{Address{Cird: "10.0.0.0/24"}, "10.0.1.7", false},
		{Address{Cird: "10.0.0.0/24"}, "10.0.0.7:20880", true},
		{Address{Cird: "10.0.0.*"}, "10.0.0.7", true},
		{Address{Cird: "10.0.0.7"}, "10.0.0.7", true},
		{Address{Wildcard: "*"}, "1.2.3.4", true},
		{Address{Wildcard: "0.0.0.0"}, "1.2.3.4", true},
		{Address{Wildcard: "10.0.*"}, "10.0.3.4", true},
		{Address{Wildcard: "10.1.*"}, "10.0.3.4", false},
		{Address{Exact: "10.0.0.1:20880"}, "10.0.0.1:20880", true},
		{Address{Exact: "10.0.0.1:20880"}, "10.0.0.1:20881", false},
		{Address{}, "10.0.0.1", false},
	}
	for _, tt := range tests {
		if got := tt.m.Match(tt.addr); got != tt.want {
			t.Errorf("%+v.Match(%q) = %v, want %v", tt.m, tt.addr, got, tt.want)
		}
	}
}

// NetUtils.matchIpExpression's forms, and the 0.0.0.0:port of tag rules.
func TestIP(t *testing.T) {
	tests := []struct {
		pattern string
		host    string
		port    int
		want    bool
	}{
		{"10.0.0.1", "10.0.0.1", 20880, true},
		{"10.0.0.1:20880", "10.0.0.1", 20880, true},
		{"10.0.0.1:20881", "10.0.0.1", 20880, false},
		{"10.0.0.1:*", "10.0.0.1", 20880, true},
		{"10.0.0.2", "10.0.0.1", 20880, false},
		{"0.0.0.0:20880", "10.0.0.1", 20880, true},
		{"0.0.0.0:20881", "10.0.0.1", 20880, false},
		{"*", "10.0.0.1", 1, true},
		{"*.*.*.*", "10.0.0.1", 1, true},
		{"10.0.0.*", "10.0.0.7", 1, true},
		{"10.0.1.*", "10.0.0.7", 1, false},
		{"10.0.0.5-10", "10.0.0.7", 1, true},
		{"10.0.0.5-10", "10.0.0.11", 1, false},
		{"10.0.0.0/24", "10.0.0.200", 1, true},
		{"10.0.0.0/24", "10.0.1.1", 1, false},
		{"[::1]:20880", "::1", 20880, true},
		{"bad/prefix", "10.0.0.1", 1, false},
	}
	for _, tt := range tests {
		if got := IP(tt.pattern, tt.host, tt.port); got != tt.want {
			t.Errorf("IP(%q, %s:%d) = %v, want %v", tt.pattern, tt.host, tt.port, got, tt.want)
		}
	}
}

package protocol

import (
	"errors"
	"reflect"
	"testing"
)

func TestDescriptors(t *testing.T) {
	tests := []struct {
		desc  string
		types []string
	}{
		{"", nil},
		{"Ljava/lang/String;I[Ljava/lang/Object;", []string{"java.lang.String", "int", "java.lang.Object[]"}},
		{GenericDescriptor, []string{"java.lang.String", "java.lang.String[]", "java.lang.Object[]"}},
		{EchoDescriptor, []string{"java.lang.Object"}},
		{"ZBCDFIJS", []string{"boolean", "byte", "char", "double", "float", "int", "long", "short"}},
		{"[[I[[Lcom/example/User;Ljava/util/List;", []string{"int[][]", "com.example.User[][]", "java.util.List"}},
	}
	for _, tt := range tests {
		got, err := ParseDescriptor(tt.desc)
		if err != nil || !reflect.DeepEqual(got, tt.types) {
			t.Errorf("ParseDescriptor(%q) = %q, %v; want %q", tt.desc, got, err, tt.types)
		}
		if n, err := CountArgs(tt.desc); err != nil || n != len(tt.types) {
			t.Errorf("CountArgs(%q) = %d, %v", tt.desc, n, err)
		}
		back, err := Descriptor(tt.types)
		if err != nil || back != tt.desc {
			t.Errorf("Descriptor(%q) = %q, %v; want %q", tt.types, back, err, tt.desc)
		}
	}
	// Class.getName form of arrays, as some generic callers send it.
	if d, err := Descriptor([]string{"[Ljava.lang.String;", "[I"}); err != nil || d != "[Ljava/lang/String;[I" {
		t.Errorf("JVM array names: %q, %v", d, err)
	}
	for _, bad := range []string{"X", "[", "Ljava/lang/String", "L;", "I["} {
		if _, err := ParseDescriptor(bad); !errors.Is(err, ErrMalformedBody) {
			t.Errorf("ParseDescriptor(%q) err = %v", bad, err)
		}
		if _, err := CountArgs(bad); err == nil {
			t.Errorf("CountArgs(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"", "java lang", "[Lx;junk", "int[", "a/b"} {
		if d, err := Descriptor([]string{bad}); err == nil {
			t.Errorf("Descriptor(%q) = %q, want error", bad, d)
		}
	}
}

func TestCommonDescriptorsMatchGeneralPath(t *testing.T) {
	for typ, want := range commonDescriptors {
		two, err := Descriptor([]string{typ, typ}) // two parameters take the general path
		if err != nil || two != want+want {
			t.Errorf("%s: general path gives %q (%v), table has %q", typ, two, err, want)
		}
	}
}

package protocol

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// serializations is the serialization extension table: each name Dubbo
// users write (protocol.serialization, the serialization URL parameter)
// and the id this codec writes in the frame header (B.2). Only hessian2 is
// implemented. It drives SerializationNames and CheckSerialization.
// Read-only.
var serializations = map[string]byte{
	"hessian2": SerializationHessian2,
}

// dubboSerializations are Dubbo's other serializations, named in the error
// so that a user who wrote one knows it is not a typo.
var dubboSerializations = []string{"avro", "compactedjava", "fastjson", "fastjson2", "fst", "fury", "gson", "jackson",
	"java", "kryo", "kryo2", "msgpack", "nativejava", "protobuf", "protobuf-json", "protostuff"}

// SerializationNames lists the serializations this codec implements.
func SerializationNames() []string { return slices.Sorted(maps.Keys(serializations)) }

// CheckSerialization reports whether name ("" is hessian2) is a
// serialization this codec implements.
func CheckSerialization(name string) error {
	if name == "" {
		return nil
	}
	if _, ok := serializations[name]; ok {
		return nil
	}
	only := strings.Join(SerializationNames(), ", ")
	if slices.Contains(dubboSerializations, name) {
		return fmt.Errorf("serialization %q is Dubbo's but not implemented here; only %s is", name, only)
	}
	return fmt.Errorf("unknown serialization %q; only %s is implemented", name, only)
}

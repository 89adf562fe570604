package generic

import (
	"encoding/json"
	"errors"
	"testing"

	hessian "github.com/apache/dubbo-go-hessian2"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// FuzzFromJSON: any type name and bytes either convert to a value hessian
// can encode and decode again, or fail with a bad-request error; never a
// panic. ToJSON of the decoded value must always marshal.
func FuzzFromJSON(f *testing.F) {
	for _, s := range []struct{ typ, json string }{
		{"int", `42`}, {"long", `-1e3`}, {"java.lang.String", `"x"`},
		{"java.util.Map<java.lang.Integer,java.util.List<long>>", `{"1":[2]}`},
		{"int[][]", `[[1],[2,3]]`}, {"byte[]", `"AQI="`}, {"com.example.User", `{"name":"a","tags":[1,2.5]}`},
		{"java.lang.Object", `{"a":[null,true,1e400]}`}, {"[Ljava.lang.String;", `["a",null]`},
	} {
		f.Add(s.typ, []byte(s.json))
	}
	f.Fuzz(func(t *testing.T, typ string, raw []byte) {
		v, err := FromJSON(typ, json.RawMessage(raw))
		if err != nil {
			if !errors.Is(err, rpc.ErrBadRequest) {
				t.Fatalf("error %v is not ErrBadRequest", err)
			}
			return
		}
		enc := hessian.NewEncoder()
		if err := enc.Encode(v); err != nil {
			t.Fatalf("FromJSON(%q, %q) = %#v, which hessian cannot encode: %v", typ, raw, v, err)
		}
		decoded, err := hessian.NewDecoder(enc.Buffer()).Decode()
		if err != nil {
			t.Fatalf("decode of %#v: %v", v, err)
		}
		if _, err := json.Marshal(ToJSON(decoded)); err != nil {
			t.Fatalf("ToJSON(%#v) does not marshal: %v", decoded, err)
		}
	})
}

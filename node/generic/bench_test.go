package generic

import (
	"encoding/json"
	"testing"
)

func BenchmarkFromJSONMap(b *testing.B) {
	raw := json.RawMessage(`{"name":"ann","age":3,"tags":["a","b"],"address":{"city":"x","zip":12345}}`)
	for b.Loop() {
		if _, err := FromJSON("java.util.Map", raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkToJSONMap(b *testing.B) {
	v := map[any]any{"name": "ann", "age": int32(3), "tags": []any{"a", "b"},
		"address": map[any]any{"city": "x", "zip": int32(12345)}}
	for b.Loop() {
		ToJSON(v)
	}
}

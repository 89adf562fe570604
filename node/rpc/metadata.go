package rpc

// Metadata is gRPC's custom metadata of a call (headers and trailers):
// lower-case keys in the order they came; a key may repeat. Keys ending in
// "-bin" carry binary values, held here as they are: encoding them (base64
// in HTTP/2 headers, length-prefixed on the plugin link) is the business of
// whoever puts them on a wire.
type Metadata []MetadataField

// MetadataField is one metadata entry.
type MetadataField struct{ Key, Value string }

// Get returns the first value of key (lower-case), or "".
func (md Metadata) Get(key string) string {
	for _, f := range md {
		if f.Key == key {
			return f.Value
		}
	}
	return ""
}

// Values returns every value of key (lower-case), in order.
func (md Metadata) Values(key string) []string {
	var vs []string
	for _, f := range md {
		if f.Key == key {
			vs = append(vs, f.Value)
		}
	}
	return vs
}

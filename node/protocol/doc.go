// Package protocol is the codec of the classic dubbo protocol (dubbo://):
// the 16-byte frame header and the hessian2 bodies of requests, responses
// and events, wire-compatible with Java Dubbo 2.7/3.x and dubbo-go 3.x
// (PROTOCOLS.md Part B). The network transport lives elsewhere and uses it
// like this:
//
//	dec := protocol.NewDecoder(conn, payload) // one per connection reader
//	f, err := dec.ReadFrame()                 // ErrPayloadTooLarge: header only, SkipBody
//	req, err := dec.DecodeRequest(f)          // or DecodeResponse
//
//	enc := protocol.NewEncoder(payload)       // one per connection writer
//	buf, err = enc.AppendResponse(buf[:0], resp) // append many, write once
//
// Header and Status are the frame header; Request and Response the decoded
// messages; Exception a Java exception result. Hessian values are handled by
// github.com/apache/dubbo-go-hessian2; this package only frames them, after
// a structural scan (scan.go) that bounds what a hostile body can make the
// library allocate. ParseDescriptor and Descriptor convert between JVM
// parameter descriptors and Java type names for generic calls.
package protocol

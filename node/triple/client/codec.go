package client

import "fmt"

// rawCodec moves messages as bytes: the caller encodes them (a protobuf
// message, or a wrapper). Its name is the content-type's subtype.
type rawCodec struct{ name string }

// Codecs of the two payload modes.
var (
	protoCodec   = rawCodec{"proto"}
	hessianCodec = rawCodec{"hessian2"}
)

func (c rawCodec) Name() string { return c.name }

func (c rawCodec) Marshal(v any) ([]byte, error) {
	if b, ok := v.([]byte); ok {
		return b, nil
	}
	return nil, fmt.Errorf("triple client: cannot send %T as bytes", v)
}

// Unmarshal keeps data: grpc-go gives every received message a buffer of
// its own, as the client configures no shared receive buffer pool.
func (c rawCodec) Unmarshal(data []byte, v any) error {
	p, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("triple client: cannot receive into %T", v)
	}
	*p = data
	return nil
}

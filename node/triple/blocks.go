package triple

import (
	"sync"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// blocks are the header blocks of most responses, encoded once per
// server: the response headers of the common content types, plain and
// gzipped, and the trailers of a call that ended well.
type blocks struct {
	headers map[string]*[2][]byte // read-only once made
	ok      []byte
}

func newBlocks() *blocks {
	b := &blocks{headers: make(map[string]*[2][]byte)}
	fb := newFrameBuf()
	for _, ct := range []string{"application/grpc", "application/grpc+proto", "application/grpc+json"} {
		var pair [2][]byte
		for i, gz := range []bool{false, true} {
			pair[i] = append([]byte(nil), b.encodeHeaders(fb, ct, gz, nil)...)
		}
		b.headers[ct] = &pair
	}
	fb.startBlock()
	fb.statusFields(nil)
	b.ok = append([]byte(nil), fb.blockBytes()...)
	return b
}

func (b *blocks) encodeHeaders(fb *frameBuf, ct string, gzip bool, md rpc.Metadata) []byte {
	fb.startBlock()
	fb.field(":status", "200")
	fb.field("content-type", ct)
	if gzip {
		fb.field("grpc-encoding", "gzip")
	}
	fb.field("grpc-accept-encoding", "gzip")
	fb.metadataFields(md)
	return fb.blockBytes()
}

// responseHeaders is the block of a response's HEADERS; it may be fb's,
// valid until fb's next block.
func (b *blocks) responseHeaders(fb *frameBuf, ct string, gzip bool, md rpc.Metadata) []byte {
	if len(md) == 0 {
		if pair := b.headers[ct]; pair != nil {
			if gzip {
				return pair[1]
			}
			return pair[0]
		}
	}
	return b.encodeHeaders(fb, ct, gzip, md)
}

// trailers is the block of a response's trailers.
func (b *blocks) trailers(fb *frameBuf, st *Status, md rpc.Metadata) []byte {
	if st.ok() && len(md) == 0 {
		return b.ok
	}
	fb.startBlock()
	fb.statusFields(okOrNil(st))
	fb.metadataFields(md)
	return fb.blockBytes()
}

// trailersOnly is the block of a response without messages: headers and
// trailers in one.
func (b *blocks) trailersOnly(fb *frameBuf, ct string, st *Status, header, trailer rpc.Metadata) []byte {
	fb.startBlock()
	fb.field(":status", "200")
	fb.field("content-type", ct)
	fb.field("grpc-accept-encoding", "gzip")
	fb.statusFields(okOrNil(st))
	fb.metadataFields(header)
	fb.metadataFields(trailer)
	return fb.blockBytes()
}

func okOrNil(st *Status) *Status {
	if st.ok() {
		return nil
	}
	return st
}

// frameBufs pools frame buffers.
type frameBufs struct{ pool sync.Pool }

func (p *frameBufs) get() *frameBuf {
	if fb, ok := p.pool.Get().(*frameBuf); ok {
		return fb
	}
	return newFrameBuf()
}

func (p *frameBufs) put(fb *frameBuf) {
	if cap(fb.b) > 64<<10 {
		fb.b = nil
	}
	if cap(fb.msg) > 64<<10 {
		fb.msg = nil
	}
	fb.reset()
	p.pool.Put(fb)
}

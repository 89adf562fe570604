package sdk

import (
	"context"
	"log/slog"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

// protoKey is the context key of a protobuf call's metadata (*protoMeta).
type protoKey struct{}

// protoMeta is a protobuf call's metadata: the caller's, decoded when the
// handler first asks, and the trailer the handler sets.
type protoMeta struct {
	raw     []byte // the caller's, as a wire metadata block
	decode  sync.Once
	md      metadata.MD
	trailer metadata.MD
}

func (pm *protoMeta) incoming() metadata.MD {
	pm.decode.Do(func() {
		md, err := wire.ParseMetadata(pm.raw)
		if err != nil {
			// The node wrote them: this is a bug, not the caller's doing.
			slog.Error("the call's metadata cannot be read", "err", err)
		}
		if len(md) > 0 {
			pm.md = make(metadata.MD, len(md))
			for _, f := range md {
				pm.md[f.Key] = append(pm.md[f.Key], f.Value)
			}
		}
	})
	return pm.md
}

// Metadata returns the metadata the caller sent with this protobuf call
// (gRPC's custom metadata: lower-case keys; -bin keys hold their binary
// values), from a handler's context or a stream's Context(); nil outside
// a protobuf call. Treat it as read-only.
func Metadata(ctx context.Context) metadata.MD {
	pm, _ := ctx.Value(protoKey{}).(*protoMeta)
	if pm == nil {
		return nil
	}
	return pm.incoming()
}

// SetTrailer adds md to the trailer metadata a protobuf call's caller gets
// with its outcome, whether the handler succeeds or fails; call it from
// the handler's goroutine before the handler returns. Outside a protobuf
// call it does nothing.
func SetTrailer(ctx context.Context, md metadata.MD) {
	if pm, _ := ctx.Value(protoKey{}).(*protoMeta); pm != nil {
		pm.trailer = metadata.Join(pm.trailer, md)
	}
}

// toWire is md as the link carries it.
func toWire(md metadata.MD) rpc.Metadata {
	if len(md) == 0 {
		return nil
	}
	out := make(rpc.Metadata, 0, len(md))
	for k, vs := range md {
		for _, v := range vs {
			out = append(out, rpc.MetadataField{Key: k, Value: v})
		}
	}
	return out
}

// protoState is what the context of a protobuf call or stream holds for
// its handler: the call's info (Client) and metadata.
type protoState struct {
	info callInfo
	meta protoMeta
}

// value is the state for a context key of this package's.
func (p *protoState) value(key any) (any, bool) {
	switch key {
	case callKey{}:
		return &p.info, true
	case protoKey{}:
		return &p.meta, true
	}
	return nil, false
}

// protoCall is one unary protobuf call from the node with all that serving
// it needs, in one allocation, as call is for Dubbo calls; it is its
// handler's context.
type protoCall struct {
	context.Context // the link's, set by Run
	protoState

	m   *protoMethod
	req []byte

	reply [48]byte // room for the reply of a short answer
}

// Value gives the handler its call's state, and the link's values.
func (c *protoCall) Value(key any) any {
	if v, ok := c.value(key); ok {
		return v
	}
	return c.Context.Value(key)
}

// Run runs the handler and encodes its reply.
func (c *protoCall) Run(ctx context.Context) []byte {
	c.Context = ctx
	clock := startClock(ctx)
	out, err := c.m.callUnary(c, c.req)
	c.m.observe(clock.elapsed(), c.info.calledOut.Load())
	trailer := toWire(c.meta.trailer)
	if err != nil {
		return wire.AppendProtoError(c.reply[:0], statusOf(err), trailer)
	}
	reply, err := wire.AppendProtoOK(c.reply[:0], trailer)
	if err != nil {
		return wire.StatusReply(codes.Internal, "the handler's trailer: "+err.Error())
	}
	if reply, err = (proto.MarshalOptions{}).MarshalAppend(reply, out); err != nil {
		return wire.StatusReply(codes.Internal, "the handler's response cannot be encoded: "+err.Error())
	}
	return reply
}

// PrepareProto decodes a unary protobuf call from the node; methods that
// have always been quick run on the link's reader (wire.ProtoInvoker).
func (s *server) PrepareProto(b []byte) (wire.Runner, bool) {
	ref, md, req, err := wire.ParseProtoCall(b)
	if err != nil {
		return replyWith(wire.StatusReply(codes.Internal, err.Error())), true
	}
	m := s.protos.method(ref)
	if m == nil || m.unary == nil {
		return replyWith(wire.StatusReply(codes.Unimplemented, "this plugin serves no unary method with that reference")), true
	}
	c := &protoCall{m: m, req: req}
	c.meta.raw = md
	c.info.caller = s.caller
	return c, m.inline.Load()
}

// replyWith is a Runner that answers reply at once.
func replyWith(reply []byte) wire.Runner {
	return wire.RunFunc(func(context.Context) []byte { return reply })
}

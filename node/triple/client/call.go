package client

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/triple/wrapper"
)

// framing is gRPC's message prefix: a flag byte and a 4-byte length.
const framing = 5

// Invoke sends inv and waits for its result, at most until ctx's deadline
// (the cluster sets the attempt's), else Config.Timeout. The payload mode
// follows the arguments (see the package comment).
func (c *Client) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	fail := func(kind error, detail string) error {
		return &rpc.CallError{Kind: kind, Service: inv.Service, Method: inv.Method, Address: c.addr, Detail: detail}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.Timeout)
		defer cancel()
	}
	msg, isProto := rpc.MessageArg(inv)
	req, codec := msg.Bytes, protoCodec
	if !isProto {
		var err error
		if req, err = wrapRequest(inv); err != nil {
			return nil, fail(rpc.ErrBadRequest, err.Error())
		}
		codec = hessianCodec
	}
	cc, err := c.pick()
	if err != nil {
		return nil, fail(rpc.ErrConnection, err.Error())
	}
	ctx = metadata.NewOutgoingContext(ctx, outgoing(inv))
	var resp []byte
	var header, trailer metadata.MD
	err = cc.Invoke(ctx, "/"+inv.Service+"/"+inv.Method, req, &resp,
		grpc.ForceCodec(codec), grpc.Header(&header), grpc.Trailer(&trailer))
	res := &rpc.Result{RequestBytes: len(req) + framing}
	if err != nil {
		ex, err := c.failure(ctx, inv, err, header, trailer)
		if err != nil {
			return nil, err
		}
		res.Exception, res.Attachments = ex, attachments(header, trailer)
		return res, nil
	}
	res.ResponseBytes = len(resp) + framing
	res.Attachments = attachments(header, trailer)
	if isProto {
		if exceptionCode(header, trailer) {
			// An exception where a message was due: nothing in the
			// protobuf answer can say which.
			res.Exception = &rpc.Exception{}
			return res, nil
		}
		res.Value = rpc.Message{Bytes: resp}
		return res, nil
	}
	v, err := wrapper.ParseResponse(resp)
	if err == nil && !wrapper.IsHessian2(v.SerializeType) {
		err = fmt.Errorf("the provider answered with serialization %q; only hessian2 is supported", v.SerializeType)
	}
	var value any
	if err == nil {
		value, err = wrapper.DecodeValue(v.Data)
	}
	if err != nil {
		return nil, fail(rpc.ErrProvider, "cannot read the response: "+err.Error())
	}
	if exceptionCode(header, trailer) {
		e := protocol.ExceptionOf(value, v.Type)
		res.Exception = &rpc.Exception{Class: e.Class, Message: e.Message}
		return res, nil
	}
	res.Value = value
	return res, nil
}

// wrapRequest is the TripleRequestWrapper of a Java-interface call: each
// argument serialized with hessian2, with its Java type.
func wrapRequest(inv *rpc.Invocation) ([]byte, error) {
	if len(inv.ParamTypes) != len(inv.Args) {
		return nil, fmt.Errorf("%d parameter types for %d arguments", len(inv.ParamTypes), len(inv.Args))
	}
	w := wrapper.Request{SerializeType: wrapper.Hessian2, Args: make([][]byte, len(inv.Args)), ArgTypes: inv.ParamTypes}
	for i, a := range inv.Args {
		b, err := wrapper.EncodeValue(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		w.Args[i] = b
	}
	return w.Append(nil), nil
}

package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dubbo-lab/dubbo/node/generic"
	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/triple"
	"github.com/dubbo-lab/dubbo/node/triple/wrapper"
)

// jsonMethod serves a method of a Java-interface service to a plain HTTP
// client, as Java Dubbo 3.3's Triple does: POST /<interface>/<method>
// with application/json, the arguments a JSON array (["world"]); a method
// of one parameter also takes its argument alone ({"name": "x"} for a
// POJO). The answer is the return value as JSON, converted as the
// gateway and `dubbo call` print it; an exception is an HTTP error whose
// message is the exception's.
type jsonMethod struct{ m *wrapperMethod }

func (jsonMethod) Kind() rpc.MethodKind { return rpc.Unary }

// Unary implements triple.UnaryMethod.
func (j jsonMethod) Unary(ctx context.Context, c *triple.Call, req []byte, reply func([]byte, rpc.Metadata, *triple.Status)) {
	m := j.m
	method, args, err := jsonArgs(m.e.methods[m.name], req)
	if err != nil {
		reply(nil, nil, triple.Errorf(triple.InvalidArgument, "%s.%s: %v", m.e.key, m.name, err))
		return
	}
	finish := func(r *protocol.Response) { reply(j.answer(r)) }
	resp := &protocol.Response{Status: protocol.StatusOK}
	if st := m.run(ctx, c, resp, method.Name, method.ParamTypes, args, false, len(req), finish); st != nil {
		reply(nil, nil, st)
	}
}

func (j jsonMethod) answer(r *protocol.Response) ([]byte, rpc.Metadata, *triple.Status) {
	if r.Status != protocol.StatusOK || r.Exception != nil {
		w := j.m.answer(r, wrapper.Hessian2, false)
		return nil, w.trailer, w.st
	}
	body, err := json.Marshal(generic.ToJSON(r.Value))
	if err != nil {
		return nil, nil, triple.Errorf(triple.Internal, "%s.%s returned a %T that has no JSON form: %v", j.m.e.key, j.m.name, r.Value, err)
	}
	return body, metadataOf(r.Attachments), nil
}

// jsonArgs picks the overload of a method that a JSON body calls and
// converts the arguments to its parameter types. The body is a JSON array
// of the arguments, or (a method of one parameter) the argument itself;
// an empty body calls a method without parameters. Of two readings that
// fit, the array of arguments wins.
func jsonArgs(overloads []Method, body []byte) (Method, []any, error) {
	body = bytes.TrimSpace(body)
	var firstErr error
	try := func(raws []json.RawMessage) (Method, []any, bool) {
		for _, m := range overloads {
			if len(m.ParamTypes) != len(raws) {
				continue
			}
			args, err := generic.Args(m.ParamTypes, raws)
			if err == nil {
				return m, args, true
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		return Method{}, nil, false
	}
	var raws []json.RawMessage
	asArray := len(body) == 0 || body[0] == '[' && json.Unmarshal(body, &raws) == nil
	if asArray {
		if m, args, ok := try(raws); ok {
			return m, args, nil
		}
	}
	if len(body) > 0 {
		if !json.Valid(body) {
			return Method{}, nil, fmt.Errorf("the body is not JSON; send a JSON array of the arguments")
		}
		if m, args, ok := try([]json.RawMessage{body}); ok {
			return m, args, nil
		}
	}
	if firstErr != nil {
		return Method{}, nil, firstErr
	}
	sigs := make([]string, len(overloads))
	for i, m := range overloads {
		sigs[i] = "(" + strings.Join(m.ParamTypes, ", ") + ")"
	}
	n := len(raws)
	if !asArray {
		n = 1
	}
	return Method{}, nil, fmt.Errorf("takes %s, not %d arguments: send a JSON array of the arguments", strings.Join(sigs, " or "), n)
}

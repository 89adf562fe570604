package transport

import (
	"strconv"
	"strings"
	"time"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// requestFor builds the dubbo request of inv with the attachments a Java
// consumer sends (B.4); timeout is the time the caller will wait.
func requestFor(inv *rpc.Invocation, timeout time.Duration) (*protocol.Request, error) {
	desc, err := protocol.Descriptor(inv.ParamTypes)
	if err != nil {
		return nil, err
	}
	att := make(map[string]any, len(inv.Attachments)+5)
	for k, v := range inv.Attachments {
		att[k] = v
	}
	att["path"] = inv.Service
	att["interface"] = inv.Service
	version := inv.Version
	if version == "" {
		version = "0.0.0"
	}
	att["version"] = version
	if inv.Group != "" {
		att["group"] = inv.Group
	}
	att["timeout"] = strconv.FormatInt(timeout.Milliseconds(), 10)
	return &protocol.Request{
		TwoWay:      !oneway(inv),
		Path:        inv.Service,
		Version:     version,
		Method:      inv.Method,
		ParamDesc:   desc,
		Args:        inv.Args,
		Attachments: att,
	}, nil
}

// oneway: Dubbo marks calls that want no response with return=false.
func oneway(inv *rpc.Invocation) bool { return inv.Attachment("return") == "false" }

// timeoutOf reads the invocation's timeout attachment (milliseconds), 0 if
// absent or unparsable.
func timeoutOf(inv *rpc.Invocation) time.Duration {
	switch v := inv.Attachments["timeout"].(type) {
	case string:
		if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	case int:
		return time.Duration(v) * time.Millisecond
	case int64:
		return time.Duration(v) * time.Millisecond
	case int32:
		return time.Duration(v) * time.Millisecond
	}
	return 0
}

// resultOf turns a response into a result, or into an error of the rpc
// category its status stands for, keeping the provider's message.
func resultOf(resp *protocol.Response, inv *rpc.Invocation, addr string) (*rpc.Result, error) {
	if resp.Status == protocol.StatusOK {
		res := &rpc.Result{Value: resp.Value, Attachments: resp.Attachments}
		if e := resp.Exception; e != nil {
			res.Exception = &rpc.Exception{Class: e.Class, Message: e.Message}
		}
		return res, nil
	}
	return nil, &rpc.CallError{
		Kind:    statusKind(resp.Status, resp.ErrorMessage),
		Service: inv.Service,
		Method:  inv.Method,
		Address: addr,
		Detail:  resp.Status.String() + ": " + resp.ErrorMessage,
	}
}

// statusKind maps a non-OK status to its error category. Java reports an
// unexported service or unknown method as a generic service error, so the
// message decides.
func statusKind(s protocol.Status, msg string) error {
	switch s {
	case protocol.StatusServerThreadpoolExhaust:
		return rpc.ErrPoolExhausted
	case protocol.StatusBadRequest, protocol.StatusClientError, protocol.StatusSerializationError:
		return rpc.ErrBadRequest
	case protocol.StatusClientTimeout, protocol.StatusServerTimeout:
		return rpc.ErrTimeout
	case protocol.StatusChannelInactive:
		return rpc.ErrConnection
	case protocol.StatusServiceNotFound:
		return rpc.ErrServiceNotFound
	}
	if notFound(msg) {
		return rpc.ErrServiceNotFound
	}
	return rpc.ErrProvider
}

var notFoundPhrases = []string{
	"not found exported service", // Java DubboProtocol.getInvoker
	"no such method",
	"cannot find method", // dubbo-go
	"service not found",
	"method not found",
}

func notFound(msg string) bool {
	m := strings.ToLower(msg)
	for _, p := range notFoundPhrases {
		if strings.Contains(m, p) {
			return true
		}
	}
	return false
}

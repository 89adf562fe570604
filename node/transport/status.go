package transport

import (
	"math"
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
	att["timeout"] = timeoutString(inv, timeout)
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

// timeoutString formats the timeout attachment, reusing the invocation's
// own or the default's string when the value is the same.
func timeoutString(inv *rpc.Invocation, timeout time.Duration) string {
	if s, ok := inv.Attachments["timeout"].(string); ok && millis(s) == timeout {
		return s
	}
	if timeout == DefaultTimeout {
		return defaultTimeoutMillis
	}
	return strconv.FormatInt(timeout.Milliseconds(), 10)
}

const defaultTimeoutMillis = "1000" // DefaultTimeout

// oneway: Dubbo marks calls that want no response with return=false.
func oneway(inv *rpc.Invocation) bool { return inv.Attachment("return") == "false" }

// timeoutOf reads the invocation's timeout attachment (milliseconds), 0 if
// absent or unparsable.
func timeoutOf(inv *rpc.Invocation) time.Duration {
	return millis(inv.Attachments["timeout"])
}

// millis reads a timeout attachment: milliseconds as a decimal string (as
// Dubbo sends it) or an integer; 0 if absent, unparsable or not positive.
func millis(v any) time.Duration {
	var ms int64
	switch v := v.(type) {
	case string:
		ms, _ = strconv.ParseInt(v, 10, 64)
	case int:
		ms = int64(v)
	case int64:
		ms = v
	case int32:
		ms = int64(v)
	}
	if ms <= 0 || ms > int64(math.MaxInt64/time.Millisecond) {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
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
	if strings.Contains(msg, tokenRefused) {
		return rpc.ErrBadRequest // a retry elsewhere is refused the same way
	}
	return rpc.ErrProvider
}

// tokenRefused is the message of Java's TokenFilter (status 70) when the
// token attachment does not match the provider's.
const tokenRefused = "Invalid token!"

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

package triple

import (
	"strconv"
	"strings"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Code is a gRPC status code, 0 (OK) to 16 (Unauthenticated). The server
// never sends a code outside that range but BizError: a handler's unknown
// code goes out as Unknown.
type Code uint32

// BizError is dubbo-go's CodeBizError, a business exception: dubbo-go's
// failover does not retry a call that ended with it, as Java's does not
// retry a business exception. It is not a gRPC code (gRPC clients read it
// as an unknown one), so a handler answers it only to a dubbo-go client
// (DubboGoClient) and Unknown to the others; over HTTP/1.1 it is Unknown.
const BizError Code = 17

// DubboGoClient says whether a call's custom metadata is that of
// dubbo-go's Triple client, whose User-Agent is
// "grpc-go-triple/<version> (<go version>)".
func DubboGoClient(md rpc.Metadata) bool {
	return strings.HasPrefix(md.Get("user-agent"), "grpc-go-triple/")
}

// gRPC's status codes (grpc/grpc doc/statuscodes.md).
const (
	OK                 Code = 0
	Canceled           Code = 1
	Unknown            Code = 2
	InvalidArgument    Code = 3
	DeadlineExceeded   Code = 4
	NotFound           Code = 5
	AlreadyExists      Code = 6
	PermissionDenied   Code = 7
	ResourceExhausted  Code = 8
	FailedPrecondition Code = 9
	Aborted            Code = 10
	OutOfRange         Code = 11
	Unimplemented      Code = 12
	Internal           Code = 13
	Unavailable        Code = 14
	DataLoss           Code = 15
	Unauthenticated    Code = 16
)

// codeInfo is what the server needs of each code: its name, as Triple's
// HTTP/1.1 error bodies and connect spell it, and the HTTP status a unary
// call over HTTP/1.1 answers with (dubbo-go's triple_protocol
// tripleCodeToHTTP, which follows connect's table).
var codeInfo = [...]struct {
	name string
	http int
}{
	OK:                 {"ok", 200},
	Canceled:           {"canceled", 408},
	Unknown:            {"unknown", 500},
	InvalidArgument:    {"invalid_argument", 400},
	DeadlineExceeded:   {"deadline_exceeded", 408},
	NotFound:           {"not_found", 404},
	AlreadyExists:      {"already_exists", 409},
	PermissionDenied:   {"permission_denied", 403},
	ResourceExhausted:  {"resource_exhausted", 429},
	FailedPrecondition: {"failed_precondition", 412},
	Aborted:            {"aborted", 409},
	OutOfRange:         {"out_of_range", 400},
	Unimplemented:      {"unimplemented", 404},
	Internal:           {"internal", 500},
	Unavailable:        {"unavailable", 503},
	DataLoss:           {"data_loss", 500},
	Unauthenticated:    {"unauthenticated", 401},
}

// String is the code's name as Triple's HTTP/1.1 error bodies carry it
// ("not_found"); a code outside 0..16 is "code_<n>".
func (c Code) String() string {
	if int(c) < len(codeInfo) {
		return codeInfo[c].name
	}
	return "code_" + strconv.FormatUint(uint64(c), 10)
}

// valid is the code as it may go in grpc-status: codes outside 0..16
// become Unknown, but BizError.
func (c Code) valid() Code {
	if int(c) < len(codeInfo) || c == BizError {
		return c
	}
	return Unknown
}

// http1 is the code as a unary HTTP/1.1 call answers it: within 0..16.
func (c Code) http1() Code {
	if int(c) < len(codeInfo) {
		return c
	}
	return Unknown
}

// httpStatus is the HTTP status of a unary HTTP/1.1 call that ended with c.
func (c Code) httpStatus() int { return codeInfo[c.http1()].http }

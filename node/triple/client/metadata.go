package client

import (
	"strconv"
	"strings"

	"google.golang.org/grpc/metadata"

	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Triple's request headers (PROTOCOLS.md D.1).
const (
	headerVersion     = "tri-service-version"
	headerGroup       = "tri-service-group"
	headerConsumerApp = "tri-consumer-appname"
)

// notSent are attachments that travel otherwise: the timeout as
// grpc-timeout, the service's identity in the path and the tri-service
// headers.
var notSent = map[string]bool{
	"timeout": true, "path": true, "interface": true, "version": true, "group": true,
}

// outgoing is the request metadata of inv.
func outgoing(inv *rpc.Invocation) metadata.MD {
	md := make(metadata.MD, len(inv.Attachments)+2)
	if inv.Version != "" {
		md[headerVersion] = []string{inv.Version}
	}
	if inv.Group != "" {
		md[headerGroup] = []string{inv.Group}
	}
	for k, v := range inv.Attachments {
		k = strings.ToLower(k)
		if notSent[k] || !validKey(k) {
			continue
		}
		var s string
		switch v := v.(type) {
		case string:
			s = v
		case []byte:
			if !strings.HasSuffix(k, "-bin") {
				k += "-bin"
			}
			md[k] = []string{string(v)}
			continue
		case bool:
			s = strconv.FormatBool(v)
		case int:
			s = strconv.Itoa(v)
		case int32:
			s = strconv.FormatInt(int64(v), 10)
		case int64:
			s = strconv.FormatInt(v, 10)
		default:
			continue
		}
		if strings.HasSuffix(k, "-bin") {
			md[k] = []string{s}
			continue
		}
		if !validValue(s) {
			continue
		}
		md[k] = []string{s}
		if k == "remote.application" {
			md[headerConsumerApp] = []string{s}
		}
	}
	return md
}

// validKey: HTTP/2 header names gRPC accepts for metadata, not gRPC's own
// nor a pseudo header.
func validKey(k string) bool {
	if k == "" || strings.HasPrefix(k, "grpc-") || k == "te" || k == "content-type" || k == "user-agent" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// validValue: printable ASCII, as gRPC requires of a text value.
func validValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// attachments are the provider's response metadata, header then trailer,
// as result attachments: text values as strings (the first of several),
// -bin values as []byte under the name without -bin.
func attachments(header, trailer metadata.MD) map[string]any {
	var out map[string]any
	for _, md := range []metadata.MD{header, trailer} {
		for k, vs := range md {
			if len(vs) == 0 || k == "content-type" || k == headerExceptionCode || strings.HasPrefix(k, "grpc-") {
				continue
			}
			if out == nil {
				out = make(map[string]any, len(header)+len(trailer))
			}
			if name, ok := strings.CutSuffix(k, "-bin"); ok {
				out[name] = []byte(vs[0])
				continue
			}
			out[k] = vs[0]
		}
	}
	return out
}

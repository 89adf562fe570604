package protocol

import (
	"strconv"
	"strings"
)

// DubboVersion is the protocol version every current Dubbo sends as the
// first value of a request body and in the "dubbo" attachment.
const DubboVersion = "2.0.2"

// SupportsResponseAttachments reports whether a consumer that sent
// dubboVersion in its request understands response types 3/4/5, using the
// Java 2.7/3.x rule (B.4): the version as an int between 2.0.2 and 2.0.99.
// Unparsable versions count as supported, empty ones not, as in Java.
func SupportsResponseAttachments(dubboVersion string) bool {
	switch dubboVersion {
	case DubboVersion:
		return true
	case "":
		return false
	}
	v, ok := intVersion(dubboVersion)
	if !ok {
		return true
	}
	return v >= 2000200 && v <= 2009900
}

// intVersion weights each dot-part's leading digits by 100 per position
// and multiplies three-part versions by 100 ("2.0.2" -> 2000200).
func intVersion(s string) (int, bool) {
	parts := strings.Split(s, ".")
	v := 0
	for i, p := range parts {
		d := len(p) - len(strings.TrimLeft(p, "0123456789"))
		if d == 0 {
			continue
		}
		n, err := strconv.Atoi(p[:d])
		if err != nil {
			return 0, false
		}
		for j := 0; j < len(parts)-i-1; j++ {
			n *= 100
		}
		v += n
	}
	if len(parts) == 3 {
		v *= 100
	}
	return v, true
}

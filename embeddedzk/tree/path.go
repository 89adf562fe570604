package tree

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// ValidatePath applies ZooKeeper's client path rules (PathUtils.validatePath).
func ValidatePath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	if p == "/" {
		return true
	}
	if p[len(p)-1] == '/' {
		return false
	}
	if !utf8.ValidString(p) {
		return false
	}
	for _, seg := range strings.Split(p[1:], "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	for _, r := range p {
		if r > 0xffff {
			// Java sees a surrogate pair, which is in the forbidden range.
			return false
		}
		if r == 0 || (r > 0 && r < 0x20) || (r >= 0x7f && r <= 0x9f) ||
			(r >= 0xd800 && r <= 0xf8ff) || (r >= 0xfff0 && r <= 0xffff) || utf16.IsSurrogate(r) {
			return false
		}
	}
	return true
}

// parentOf returns the parent path and child name; the parent of "/a" is "/".
// ok is false when p has no slash.
func parentOf(p string) (parent, name string, ok bool) {
	i := strings.LastIndexByte(p, '/')
	if i < 0 {
		return "", "", false
	}
	if i == 0 {
		return "/", p[1:], true
	}
	return p[:i], p[i+1:], true
}

// isSpecial reports the system nodes that may not be deleted.
func isSpecial(p string) bool {
	switch p {
	case "/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config":
		return true
	}
	return false
}

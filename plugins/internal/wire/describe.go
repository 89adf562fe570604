package wire

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dubbo-lab/dubbo/node/provider/settings"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Description is what a plugin answers to Describe, as JSON.
type Description struct {
	Services []Service `json:"services"`
}

// Service is one Dubbo service a plugin serves.
type Service struct {
	Interface string   `json:"interface"`
	Version   string   `json:"version,omitempty"`
	Group     string   `json:"group,omitempty"`
	Methods   []Method `json:"methods"`
	// Params are the service's settings as Dubbo URL parameters (weight,
	// dubbo.tag, timeout in ms, ...), for its provider URL.
	Params map[string]string `json:"params,omitempty"`
}

// Method is one method with its Java signature.
type Method struct {
	Name       string   `json:"name"`
	ParamTypes []string `json:"paramTypes"`
	ReturnType string   `json:"returnType"`
}

// maxDescription bounds what the node accepts from Describe.
const maxDescription = 1 << 20

// ParseDescription decodes and validates a Describe answer.
func ParseDescription(b []byte) (*Description, error) {
	if len(b) > maxDescription {
		return nil, fmt.Errorf("description is %d bytes, more than %d", len(b), maxDescription)
	}
	var d Description
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("description is not valid JSON: %w", err)
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return &d, nil
}

// Validate reports the first thing wrong with d: an empty or malformed
// interface name, a service described twice, a bad method name, a
// method described twice, or a Java type name that is not one. No services
// at all is valid: a consumer-side plugin only calls.
func (d *Description) Validate() error {
	seen := make(map[string]bool, len(d.Services))
	for _, s := range d.Services {
		if !ValidJavaName(s.Interface) {
			return fmt.Errorf("service interface %q is not a Java class name (like org.example.Greeter)", s.Interface)
		}
		key := url.ServiceKey(s.Interface, s.Version, s.Group)
		if seen[key] {
			return fmt.Errorf("service %s is described twice", key)
		}
		seen[key] = true
		if err := settings.CheckParams(s.Params); err != nil {
			return fmt.Errorf("service %s: %w", key, err)
		}
		if len(s.Methods) == 0 {
			return fmt.Errorf("service %s has no methods", key)
		}
		names := make(map[string]bool, len(s.Methods))
		for _, m := range s.Methods {
			if !validIdent(m.Name) {
				return fmt.Errorf("service %s: method name %q is not a Java identifier", key, m.Name)
			}
			if names[m.Name] {
				return fmt.Errorf("service %s: method %s is described twice (overloads are not supported)", key, m.Name)
			}
			names[m.Name] = true
			for i, t := range m.ParamTypes {
				if !ValidJavaType(t) || t == "void" {
					return fmt.Errorf("service %s: method %s: parameter %d type %q is not a Java type", key, m.Name, i+1, t)
				}
			}
			if !ValidJavaType(m.ReturnType) {
				return fmt.Errorf("service %s: method %s: return type %q is not a Java type", key, m.Name, m.ReturnType)
			}
		}
	}
	return nil
}

// A ServiceID names a service as calls do, with the versions that mean the
// same made one (url.NormalVersion): a map key built without allocating,
// where url.ServiceKey builds a string on every call.
type ServiceID struct{ Interface, Version, Group string }

// IDOf is the ServiceID of a service or of a call to it.
func IDOf(iface, version, group string) ServiceID {
	return ServiceID{iface, url.NormalVersion(version), group}
}

var primitives = map[string]bool{
	"boolean": true, "byte": true, "char": true, "short": true,
	"int": true, "long": true, "float": true, "double": true, "void": true,
}

// ValidJavaType accepts a primitive, a class name, or either followed by
// array brackets ("byte[]", "java.lang.String[][]").
func ValidJavaType(t string) bool {
	base := t
	for strings.HasSuffix(base, "[]") {
		base = strings.TrimSuffix(base, "[]")
	}
	if primitives[base] {
		return base != "void" || base == t
	}
	return ValidJavaName(base)
}

// ValidJavaName accepts a dotted Java class name; '$' is allowed for nested
// classes.
func ValidJavaName(name string) bool {
	if name == "" || len(name) > 1024 {
		return false
	}
	for _, part := range strings.Split(name, ".") {
		if !validIdent(part) {
			return false
		}
	}
	return true
}

func validIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}

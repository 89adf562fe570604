package metadata

import (
	"encoding/json"
	"fmt"
)

// ServiceDefinition is Java's FullServiceDefinition: the methods and types
// of one interface as a provider reports them to the metadata report
// (/dubbo/metadata/<interface>[/<version>][/<group>]/provider/<app>).
type ServiceDefinition struct {
	CanonicalName string             `json:"canonicalName"`
	CodeSource    string             `json:"codeSource,omitempty"`
	Methods       []MethodDefinition `json:"methods"`
	Types         []TypeDefinition   `json:"types"`
	Annotations   []string           `json:"annotations"`
	// Parameters are the provider URL's parameters.
	Parameters map[string]string `json:"parameters,omitempty"`
}

// MethodDefinition is one method: Java type names of its parameters and
// of its return value.
type MethodDefinition struct {
	Name           string           `json:"name"`
	ParameterTypes []string         `json:"parameterTypes"`
	ReturnType     string           `json:"returnType"`
	Parameters     []TypeDefinition `json:"parameters"`
	Annotations    []string         `json:"annotations"`
}

// TypeDefinition describes one Java type used by the interface.
type TypeDefinition struct {
	Type       string            `json:"type"`
	Items      []string          `json:"items,omitempty"`
	Enums      []string          `json:"enums,omitempty"`
	Properties map[string]string `json:"properties,omitempty"`
}

// Method returns the definition of name. Overloads are returned in order;
// ok is false when the interface has no such method.
func (d *ServiceDefinition) Method(name string) (overloads []MethodDefinition, ok bool) {
	for _, m := range d.Methods {
		if m.Name == name {
			overloads = append(overloads, m)
		}
	}
	return overloads, len(overloads) > 0
}

// ParseServiceDefinition decodes a report written by Java, dubbo-go or us.
func ParseServiceDefinition(data []byte) (*ServiceDefinition, error) {
	var d ServiceDefinition
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("service definition json: %w", err)
	}
	return &d, nil
}

// ReportPath is where the metadata report keeps the definition of one
// service, below root (normally /dubbo/metadata): interface, then version
// and group when not empty, then side ("provider"/"consumer") and app.
func ReportPath(root, iface, version, group, side, app string) string {
	p := root + "/" + iface
	if version != "" {
		p += "/" + version
	}
	if group != "" {
		p += "/" + group
	}
	return p + "/" + side + "/" + app
}

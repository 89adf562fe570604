package metadata

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
)

// Metadata keys of a service instance (Java's ServiceInstanceMetadataUtils).
const (
	KeyEndpoints                = "dubbo.endpoints"
	KeyMetadataServiceURLParams = "dubbo.metadata-service.url-params"
	KeyRevision                 = "dubbo.metadata.revision"
	KeyStorageType              = "dubbo.metadata.storage-type"
	KeyTimestamp                = "timestamp"

	// StorageLocal means consumers ask the provider's MetadataService.
	StorageLocal = "local"
	// StorageRemote means the MetadataInfo is in the registry.
	StorageRemote = "remote"

	// InstancePayloadClass is the Jackson type tag Java's reader needs.
	InstancePayloadClass = "org.apache.dubbo.registry.zookeeper.ZookeeperInstance"
)

// Instance is Curator x-discovery's ServiceInstance with Dubbo's
// ZookeeperInstance payload, as stored at /services/<app>/<host:port>.
// Unknown fields (enabled, tag) are ignored when reading.
type Instance struct {
	Name                string           `json:"name"`
	ID                  string           `json:"id"`
	Address             string           `json:"address"`
	Port                int              `json:"port"`
	SSLPort             *int             `json:"sslPort"`
	Payload             *InstancePayload `json:"payload"`
	RegistrationTimeUTC int64            `json:"registrationTimeUTC"`
	ServiceType         string           `json:"serviceType"`
	URISpec             *json.RawMessage `json:"uriSpec"`
}

// InstancePayload is Dubbo's ZookeeperInstance.
type InstancePayload struct {
	Class    string            `json:"@class"`
	ID       string            `json:"id"`
	Name     string            `json:"name"`
	Metadata map[string]string `json:"metadata"`
}

// Endpoint is one protocol port of an instance (dubbo.endpoints).
type Endpoint struct {
	Port     int    `json:"port"`
	Protocol string `json:"protocol"`
}

// InstanceSpec is what a provider says about itself to build an Instance.
type InstanceSpec struct {
	App       string
	Host      string
	Port      int        // the main (dubbo) port; the instance id is host:port
	Endpoints []Endpoint // default: one dubbo endpoint on Port
	Revision  string     // Info.Revision
	// MetadataServiceParams describe the MetadataService endpoint (Java's
	// dubbo.metadata-service.url-params); default DefaultMetadataServiceParams.
	MetadataServiceParams map[string]string
	// Extra metadata, e.g. "timestamp".
	Metadata    map[string]string
	StorageType string // default StorageLocal
	TimeMillis  int64  // registrationTimeUTC
}

// DefaultMetadataServiceParams is what Java registers for a MetadataService
// served over dubbo on port.
func DefaultMetadataServiceParams(port int, release string) map[string]string {
	return map[string]string{
		"connections": "1",
		"version":     "1.0.0",
		"dubbo":       "2.0.2",
		"release":     release,
		"side":        "provider",
		"port":        strconv.Itoa(port),
		"protocol":    "dubbo",
	}
}

// NewInstance builds the instance node content of a provider.
func NewInstance(s InstanceSpec) (*Instance, error) {
	id := net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
	eps := s.Endpoints
	if len(eps) == 0 {
		eps = []Endpoint{{Port: s.Port, Protocol: "dubbo"}}
	}
	epJSON, err := json.Marshal(eps)
	if err != nil {
		return nil, fmt.Errorf("instance %s: endpoints: %w", id, err)
	}
	msp := s.MetadataServiceParams
	if msp == nil {
		msp = DefaultMetadataServiceParams(s.Port, "")
	}
	mspJSON, err := json.Marshal(msp)
	if err != nil {
		return nil, fmt.Errorf("instance %s: metadata service params: %w", id, err)
	}
	md := map[string]string{}
	for k, v := range s.Metadata {
		md[k] = v
	}
	md[KeyEndpoints] = string(epJSON)
	md[KeyMetadataServiceURLParams] = string(mspJSON)
	md[KeyRevision] = s.Revision
	md[KeyStorageType] = s.StorageType
	if md[KeyStorageType] == "" {
		md[KeyStorageType] = StorageLocal
	}
	return &Instance{
		Name:                s.App,
		ID:                  id,
		Address:             s.Host,
		Port:                s.Port,
		Payload:             &InstancePayload{Class: InstancePayloadClass, ID: id, Name: s.App, Metadata: md},
		RegistrationTimeUTC: s.TimeMillis,
		ServiceType:         "DYNAMIC",
	}, nil
}

// Meta returns one metadata value of the payload ("" if absent).
func (in *Instance) Meta(key string) string {
	if in.Payload == nil {
		return ""
	}
	return in.Payload.Metadata[key]
}

// Revision is the instance's metadata revision.
func (in *Instance) Revision() string { return in.Meta(KeyRevision) }

// Endpoints decodes dubbo.endpoints; without it the instance's own port is
// its one dubbo endpoint.
func (in *Instance) Endpoints() ([]Endpoint, error) {
	raw := in.Meta(KeyEndpoints)
	if raw == "" {
		return []Endpoint{{Port: in.Port, Protocol: "dubbo"}}, nil
	}
	var eps []Endpoint
	if err := json.Unmarshal([]byte(raw), &eps); err != nil {
		return nil, fmt.Errorf("instance %s: bad %s %q: %w", in.ID, KeyEndpoints, raw, err)
	}
	return eps, nil
}

// MetadataServiceParams decodes dubbo.metadata-service.url-params.
func (in *Instance) MetadataServiceParams() (map[string]string, error) {
	raw := in.Meta(KeyMetadataServiceURLParams)
	if raw == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("instance %s: bad %s %q: %w", in.ID, KeyMetadataServiceURLParams, raw, err)
	}
	return m, nil
}

// ParseInstance decodes instance node data written by Java or dubbo-go.
func ParseInstance(data []byte) (*Instance, error) {
	var in Instance
	if err := json.Unmarshal(data, &in); err != nil {
		return nil, fmt.Errorf("service instance json: %w", err)
	}
	if in.Address == "" {
		return nil, fmt.Errorf("service instance json: no address")
	}
	return &in, nil
}

package metadata

import (
	"fmt"
	"math"
	"strconv"

	"github.com/dubbo-lab/dubbo/node/protocol"
)

// InfoFromValue converts the decoded hessian result of
// MetadataService#getMetadataInfo into an Info. Java answers with an
// org.apache.dubbo.metadata.MetadataInfo object whose services map holds
// MetadataInfo$ServiceInfo objects; dubbo-go with the same classes plus a
// "tag" field and a long port. A hessian decoder without those classes
// registered yields string-keyed maps (objects, with a "_class" entry) or
// any-keyed maps (Java maps); both are accepted, and unknown fields are
// ignored. A null result (no metadata for that revision) is an error.
func InfoFromValue(v any) (*Info, error) {
	if v == nil {
		return nil, fmt.Errorf("metadata info: null (the provider has no metadata for this revision)")
	}
	m, ok := protocol.Fields(v)
	if !ok {
		return nil, fmt.Errorf("metadata info: want an object, got %T", v)
	}
	info := &Info{App: str(m["app"]), Revision: str(m["revision"]), Services: map[string]*ServiceInfo{}}
	if raw := m["services"]; raw != nil {
		services, ok := protocol.Fields(raw)
		if !ok {
			return nil, fmt.Errorf("metadata info: services: want a map, got %T", raw)
		}
		for key, sv := range services {
			sm, ok := protocol.Fields(sv)
			if !ok {
				return nil, fmt.Errorf("metadata info: service %s: want an object, got %T", key, sv)
			}
			s := &ServiceInfo{
				Name:     str(sm["name"]),
				Group:    str(sm["group"]),
				Version:  str(sm["version"]),
				Protocol: str(sm["protocol"]),
				Port:     integer(sm["port"]),
				Path:     str(sm["path"]),
				Params:   map[string]string{},
			}
			if ps, ok := protocol.Fields(sm["params"]); ok {
				for pk, pv := range ps {
					s.Params[pk] = str(pv)
				}
			}
			info.Services[key] = s
		}
	}
	return info, nil
}

func str(v any) string {
	switch s := v.(type) {
	case nil:
		return ""
	case string:
		return s
	case []byte:
		return string(s)
	}
	return fmt.Sprint(v)
}

func integer(v any) int {
	switch n := v.(type) {
	case int32:
		return int(n)
	case int64:
		return int(n)
	case int:
		return n
	case float64:
		if n >= 0 && n <= math.MaxInt32 {
			return int(n)
		}
	case string:
		i, _ := strconv.Atoi(n)
		return i
	}
	return 0
}

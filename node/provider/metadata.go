package provider

import (
	"context"
	"sync/atomic"

	hessian "github.com/apache/dubbo-go-hessian2"

	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Dubbo's MetadataService, which a Dubbo 3 consumer in application-level
// discovery calls on a provider instance (storage type "local") to learn
// which services it exports (PROTOCOLS.md C.5). It is served on the dubbo
// port under group = application name, version 1.0.0, never registered.
const (
	MetadataServiceInterface = "org.apache.dubbo.metadata.MetadataService"
	MetadataServiceVersion   = "1.0.0"
	metadataInfoClass        = "org.apache.dubbo.metadata.MetadataInfo"
	serviceInfoClass         = "org.apache.dubbo.metadata.MetadataInfo$ServiceInfo"
)

type metadataService struct {
	exporter *exporter
	info     atomic.Pointer[metadata.Info]
}

// newMetadataService makes p's MetadataService, served on each of its
// servers: natively on dubbo, in wrapper mode on tri (which dubbo-go's
// consumers call when the instance names tri).
func newMetadataService(p *Provider) *metadataService {
	app := p.cfg.Application
	ms := &metadataService{}
	ms.info.Store(metadata.NewInfo(app, nil))
	get := Method{Name: "getMetadataInfo", ParamTypes: []string{"java.lang.String"}, ReturnType: metadataInfoClass}
	ms.exporter = &exporter{
		key: url.ServiceKey(MetadataServiceInterface, MetadataServiceVersion, app),
		svc: Service{
			Interface: MetadataServiceInterface,
			Version:   MetadataServiceVersion,
			Group:     app,
			Methods:   []Method{get},
			Invoker:   rpc.InvokerFunc(ms.invoke),
		},
		methods: map[string][]Method{get.Name: {get}},
	}
	for _, s := range p.servers {
		ep := &endpoint{srv: s}
		ms.exporter.eps = append(ms.exporter.eps, ep)
		if s.cfg.Name == ProtocolTriple {
			ms.exporter.wrapped = wrapperMethods(p, ms.exporter, ep)
		}
	}
	return ms
}

func (ms *metadataService) set(info *metadata.Info) { ms.info.Store(info) }

// invoke answers getMetadataInfo(revision). The current info is returned
// even for another revision: it is the newest this provider has, and a
// consumer that asked for an older one refreshes when it sees the new
// revision in the instance node.
func (ms *metadataService) invoke(_ context.Context, _ *rpc.Invocation) (*rpc.Result, error) {
	return &rpc.Result{Value: metadataInfoObject(ms.info.Load())}, nil
}

// metadataInfoObject renders info as the hessian object Java deserializes
// into MetadataInfo: maps carrying hessian's class key are written as typed
// objects with those fields.
func metadataInfoObject(info *metadata.Info) map[string]any {
	services := make(map[string]any, len(info.Services))
	for k, s := range info.Services {
		params := make(map[string]any, len(s.Params))
		for pk, pv := range s.Params {
			params[pk] = pv
		}
		services[k] = map[string]any{
			hessian.ClassKey: serviceInfoClass,
			"name":           s.Name,
			"group":          nilIfEmpty(s.Group),
			"version":        nilIfEmpty(s.Version),
			"protocol":       s.Protocol,
			"port":           int32(s.Port),
			"path":           s.Path,
			"params":         params,
		}
	}
	return map[string]any{
		hessian.ClassKey: metadataInfoClass,
		"app":            info.App,
		"revision":       info.Revision,
		"services":       services,
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

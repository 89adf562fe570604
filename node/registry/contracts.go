package registry

import (
	"context"

	"github.com/dubbo-lab/dubbo/node/registry/metadata"
)

// The registry's other services, besides Registry, that the provider and
// consumer roles use when their registry has them (the ZooKeeper registry
// has all): a role asks for each with a type assertion.

// ConfigFunc receives a rule document: its content, or deleted=true when the
// key does not exist (any more).
type ConfigFunc func(content string, deleted bool)

// ConfigCenter delivers rule documents (Dubbo's dynamic configuration:
// override and routing rules by key).
type ConfigCenter interface {
	Watch(ctx context.Context, key string, fn ConfigFunc) (cancel func(), err error)
}

// MetadataReport gives the service definitions providers published; generic
// calls read their parameter types from them.
type MetadataReport interface {
	GetServiceDefinition(ctx context.Context, iface, version, group string) (*metadata.ServiceDefinition, error)
}

// InstancesFunc receives the full current instance list of one application,
// sorted by id; empty means none.
type InstancesFunc func(app string, instances []*metadata.Instance)

// ServiceDiscovery is application-level discovery as a consumer reads it:
// interface -> applications (mapping), an application's instances, and the
// metadata of one revision.
type ServiceDiscovery interface {
	WatchMapping(ctx context.Context, iface string, fn func(apps []string)) (cancel func(), err error)
	WatchInstances(ctx context.Context, app string, fn InstancesFunc) (cancel func(), err error)
	GetAppMetadata(ctx context.Context, app, revision string) (*metadata.Info, error)
}

// InstanceRegistry is application-level discovery as a provider writes it.
type InstanceRegistry interface {
	RegisterInstance(ctx context.Context, in *metadata.Instance) error
	UnregisterInstance(ctx context.Context, app, id string) error
	AddMapping(ctx context.Context, iface, app string) error
	PublishServiceDefinition(ctx context.Context, iface, version, group, app string, def *metadata.ServiceDefinition) error
}

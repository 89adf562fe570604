package consumer

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/dubbo-lab/dubbo/node/registry/metadata"
)

// The Java definition of a referenced service, for typing the values of
// mock answers (package mock): read from the metadata report the first
// time a mock answers, and kept by the reference.

// definitionRetry is how long a reference believes that it cannot read
// its service's definition before asking again, so that mocked calls under
// load do not each ask the registry.
const definitionRetry = 30 * time.Second

// definitionTimeout bounds one read of the definition.
const definitionTimeout = 2 * time.Second

type definition struct {
	mu       sync.Mutex // held while reading
	def      *metadata.ServiceDefinition
	failedAt time.Time
}

// ReturnType implements mock.TypeResolver from the service definition its
// providers reported: the Java return type of method (of the overload
// taking paramTypes, when there are several), and the bean properties of
// the classes it lists. "" when the definition is not known.
func (r *Reference) ReturnType(ctx context.Context, method string, paramTypes []string) (string, func(string) map[string]string) {
	def := r.definition(ctx)
	if def == nil {
		return "", nil
	}
	overloads, _ := def.Method(method)
	var ret string
	switch {
	case len(overloads) == 1:
		ret = overloads[0].ReturnType
	default:
		for _, m := range overloads {
			if slices.Equal(m.ParameterTypes, paramTypes) {
				ret = m.ReturnType
			}
		}
	}
	return ret, func(class string) map[string]string {
		for _, t := range def.Types {
			if t.Type == class {
				return t.Properties
			}
		}
		return nil
	}
}

func (r *Reference) definition(ctx context.Context) *metadata.ServiceDefinition {
	if r.c.meta == nil {
		return nil
	}
	d := &r.def
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.def != nil || time.Since(d.failedAt) < definitionRetry {
		return d.def
	}
	// A fail mock answers calls whose context may be about to end.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), definitionTimeout)
	defer cancel()
	def, err := r.c.meta.GetServiceDefinition(ctx, r.rc.Interface, r.rc.Version, r.rc.Group)
	if err != nil {
		d.failedAt = time.Now()
		r.log.Debug("service definition not read; mock answers are typed by their text", "err", err)
		return nil
	}
	d.def = def
	return def
}

package scaffold

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/registry/zookeeper"
	"github.com/dubbo-lab/dubbo/node/url"
)

// Existing is a service that runs already, as the registry describes it.
type Existing struct {
	Interface, Version, Group string
	// Definition is the service definition its providers published to the
	// metadata report (what the console's methods table shows); nil when
	// none did (dubbo-go publishes none).
	Definition *metadata.ServiceDefinition
	// Methods are the method names its provider URLs list, for when
	// Definition is nil: their types are not known.
	Methods []string
}

// Registry is what ReadService reads: node/registry/zookeeper's Registry.
type Registry interface {
	GetServiceDefinition(ctx context.Context, iface, version, group string) (*metadata.ServiceDefinition, error)
	Lookup(ctx context.Context, iface, category string) ([]*url.URL, error)
}

// ReadService reads the definition of iface from the registry: the
// service definition its providers published, else the method names of
// its provider URLs. An empty version and group are taken from the
// providers when they all agree on them.
func ReadService(ctx context.Context, r Registry, iface, version, group string) (*Existing, error) {
	urls, err := r.Lookup(ctx, iface, "providers")
	if err != nil {
		return nil, fmt.Errorf("read the providers of %s: %w", iface, err)
	}
	if version == "" && group == "" {
		version, group = onlyVersion(urls)
	}
	e := &Existing{Interface: iface, Version: version, Group: group}
	e.Definition, err = r.GetServiceDefinition(ctx, iface, version, group)
	switch {
	case err == nil:
		return e, nil
	case !errors.Is(err, zookeeper.ErrNoDefinition):
		return nil, fmt.Errorf("read the service definition of %s: %w", serviceKey(iface, version, group), err)
	}
	var found []string
	for _, u := range urls {
		if url.NormalVersion(u.Param(url.KeyVersion)) != url.NormalVersion(version) || u.Param(url.KeyGroup) != group {
			continue
		}
		for m := range strings.SplitSeq(u.Param("methods"), ",") {
			if m = strings.TrimSpace(m); m != "" && !slices.Contains(e.Methods, m) {
				e.Methods = append(e.Methods, m)
			}
		}
		found = append(found, u.Address())
	}
	switch {
	case len(found) == 0 && len(urls) > 0:
		return nil, fmt.Errorf("no provider of %s in the registry; its providers serve %s: say which with --version and --group", serviceKey(iface, version, group), versions(urls))
	case len(found) == 0:
		return nil, fmt.Errorf("no provider of %s in the registry, and no service definition: is it running, and registered with this registry?", serviceKey(iface, version, group))
	case len(e.Methods) == 0:
		return nil, fmt.Errorf("%s has no service definition in the registry's metadata report, and its providers (%s) list no methods", serviceKey(iface, version, group), strings.Join(found, ", "))
	}
	// dubbo-go lists each method under its Go name too (SayHello beside
	// sayHello): one is enough.
	e.Methods = slices.DeleteFunc(e.Methods, func(m string) bool {
		return m != "" && m[0] >= 'A' && m[0] <= 'Z' && slices.Contains(e.Methods, strings.ToLower(m[:1])+m[1:])
	})
	slices.Sort(e.Methods)
	return e, nil
}

// onlyVersion is the version and group of the providers when they all
// have the same.
func onlyVersion(urls []*url.URL) (version, group string) {
	keys := map[[2]string]bool{}
	for _, u := range urls {
		keys[[2]string{u.Param(url.KeyVersion), u.Param(url.KeyGroup)}] = true
	}
	if len(keys) != 1 {
		return "", ""
	}
	for k := range keys {
		return k[0], k[1]
	}
	return "", ""
}

// versions lists the service keys of the providers.
func versions(urls []*url.URL) string {
	var keys []string
	for _, u := range urls {
		k := serviceKey(u.ParamOr(url.KeyInterface, u.Path()), u.Param(url.KeyVersion), u.Param(url.KeyGroup))
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	return strings.Join(keys, ", ")
}

// existingCode is what the templates of an existing service's handler
// fill in besides handler's fields.
type existingCode struct {
	Methods []existingMethod
	Names   []string // the methods' Java names, sorted
	POJOs   []*pojo
	// Overrides are the methods whose Java signature the SDK is given.
	Overrides []existingMethod
	Time      bool // a type is time.Time
	Untyped   bool // some methods' types are not known
}

// existingMethod is one method of an existing service.
type existingMethod struct {
	Java, Go   string
	Params     []param
	Result     string // the Go result type; "" for void
	Zero       string // the zero result, "" for void
	Declared   string // the Java declaration, for its comment
	Typed      bool   // its types are known
	JavaParams []string
	JavaReturn string
	TestArgs   string // zero arguments for a test call
}

type param struct{ Name, Type, Comment string }

// existingHandler is the handler of an existing service.
func existingHandler(spec Spec) (*handler, error) {
	e := spec.Existing
	iface := e.Interface
	if spec.Interface != "" {
		iface = spec.Interface
	}
	spec.Version, spec.Group = e.Version, e.Group
	h := newHandler("existing", spec, iface)
	code := &existingCode{}
	jt := newJavaTypes(e.Definition, h.Type)
	if e.Definition == nil {
		code.Untyped = true
		for _, name := range e.Methods {
			m, ok := methodName(name)
			if !ok {
				h.Notes = append(h.Notes, fmt.Sprintf("method %s is left out: the Go SDK serves methods whose names start with a lower-case letter", name))
				continue
			}
			m.Result, m.Zero, m.Declared = "any", "nil, ", name+"(?)"
			code.Methods = append(code.Methods, m)
		}
		h.Notes = append(h.Notes, fmt.Sprintf("the registry has no service definition of %s (dubbo-go publishes none): the methods' parameter and return types are not known; write them as the Java interface declares them", h.Service))
	} else {
		seen := map[string]bool{}
		for _, md := range e.Definition.Methods {
			if seen[md.Name] {
				h.Notes = append(h.Notes, fmt.Sprintf("%s(%s) is left out: the Go SDK serves one method of a name, and %s has another", md.Name, strings.Join(md.ParameterTypes, ", "), md.Name))
				continue
			}
			m, ok := methodName(md.Name)
			if !ok {
				h.Notes = append(h.Notes, fmt.Sprintf("method %s is left out: the Go SDK serves methods whose names start with a lower-case letter", md.Name))
				continue
			}
			seen[md.Name] = true
			typedMethod(&m, md, jt, code, h)
			code.Methods = append(code.Methods, m)
		}
	}
	if len(code.Methods) == 0 {
		return nil, fmt.Errorf("%s has no method the Go SDK can serve", h.Service)
	}
	code.POJOs = jt.structs()
	for _, m := range code.Methods {
		code.Names = append(code.Names, m.Java)
	}
	slices.Sort(code.Names)
	h.Existing = code
	h.CallExample = "dubbo call" + versionFlags(spec) + " " + iface + " " + code.Methods[0].Java + " ..."
	return h, nil
}

// methodName is a method of a Java name, if the SDK can serve one of that
// name (it names Go's SayHello sayHello).
func methodName(java string) (existingMethod, bool) {
	if java == "" || java[0] < 'a' || java[0] > 'z' || identifier(java) != java {
		return existingMethod{}, false
	}
	return existingMethod{Java: java, Go: exported(java)}, true
}

// typedMethod fills m from its definition.
func typedMethod(m *existingMethod, md metadata.MethodDefinition, jt *javaTypes, code *existingCode, h *handler) {
	m.Typed = true
	exact := true
	var args []string
	m.JavaParams = []string{}
	for i, pt := range md.ParameterTypes {
		gt := jt.goType(pt)
		p := param{Name: fmt.Sprintf("arg%d", i), Type: gt.Expr}
		if gt.Unmapped != "" {
			p.Comment = gt.Unmapped
			h.Notes = append(h.Notes, fmt.Sprintf("%s: parameter %d is a %s, which has no Go type: it is any", md.Name, i+1, gt.Unmapped))
		}
		exact = exact && gt.Exact
		code.Time = code.Time || gt.Expr == "time.Time"
		m.Params = append(m.Params, p)
		m.JavaParams = append(m.JavaParams, erase(pt))
		args = append(args, zeroArg(gt.Expr))
	}
	m.TestArgs = strings.Join(args, ", ")
	ret := md.ReturnType
	if ret == "" {
		ret = "void"
	}
	m.JavaReturn = erase(ret)
	m.Declared = ret + " " + md.Name + "(" + strings.Join(md.ParameterTypes, ", ") + ")"
	if ret != "void" {
		gt := jt.goType(ret)
		if gt.Unmapped != "" {
			h.Notes = append(h.Notes, fmt.Sprintf("%s: its result is a %s, which has no Go type: it is any", md.Name, gt.Unmapped))
		}
		exact = exact && gt.Exact
		code.Time = code.Time || gt.Expr == "time.Time"
		m.Result, m.Zero = gt.Expr, zeroResult(gt.Expr)+", "
	}
	if !exact {
		code.Overrides = append(code.Overrides, *m)
	}
}

// zeroResult is the zero value of a Go type, as a stub returns it.
func zeroResult(expr string) string { return zero(expr, false) }

// zeroArg is an argument of a Go type for a test call: a Java caller's
// null where the type takes one.
func zeroArg(expr string) string { return zero(expr, true) }

// zero is the zero value of a Go type; typed, a number's is converted to
// it (an argument of type any would otherwise be a Go int).
func zero(expr string, typed bool) string {
	switch expr {
	case "string":
		return `""`
	case "bool":
		return "false"
	case "int8", "int16", "int32", "int64", "float32", "float64":
		if typed {
			return expr + "(0)"
		}
		return "0"
	case "time.Time":
		if typed {
			return "time.UnixMilli(0)"
		}
		return "time.Time{}"
	}
	return "nil"
}

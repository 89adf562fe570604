package sdk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"strings"
	"time"

	hessian "github.com/apache/dubbo-go-hessian2"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

// Dispatcher calls handler methods for Dubbo invocations; Serve uses one
// behind the plugin boundary, and a test can use one directly.
type Dispatcher struct {
	services map[wire.ServiceID]*service
	desc     wire.Description
}

type service struct {
	key     string             // [group/]interface[:version], for messages
	methods map[string]*method // by Dubbo name and by Go name
}

type method struct {
	name string // Dubbo name, sayHello
	fn   reflect.Value
	// fn itself when it takes and returns a string, the commonest shape:
	// called without reflect, whose Call took a third of the plugin's own
	// work per call (its argument and result slices, its checks).
	strFn    func(context.Context, string) (string, error)
	params   []reflect.Type
	result   bool // returns (T, error) rather than error
	javaSig  Signature
	inlining // whether its calls run on the link's reader
}

var (
	ctxType   = reflect.TypeFor[context.Context]()
	errType   = reflect.TypeFor[error]()
	timeType  = reflect.TypeFor[time.Time]()
	bytesType = reflect.TypeFor[[]byte]()
	pojoType  = reflect.TypeFor[hessian.POJO]()
)

// NewDispatcher checks services and prepares their methods. The error names
// the service and method at fault and how to fix it.
func NewDispatcher(services ...Service) (*Dispatcher, error) {
	d := &Dispatcher{services: make(map[wire.ServiceID]*service, len(services))}
	for _, s := range services {
		svc, desc, err := newService(s)
		if err != nil {
			return nil, err
		}
		id := wire.IDOf(s.Interface, s.Version, s.Group)
		if d.services[id] != nil {
			return nil, errorf("service %s is given twice", svc.key)
		}
		d.services[id] = svc
		d.desc.Services = append(d.desc.Services, desc)
	}
	if err := d.desc.Validate(); err != nil {
		return nil, errorf("%v", err)
	}
	return d, nil
}

func newService(s Service) (*service, wire.Service, error) {
	desc := wire.Service{Interface: s.Interface, Version: url.NormalVersion(s.Version), Group: s.Group}
	key := url.ServiceKey(s.Interface, s.Version, s.Group)
	if s.Handler == nil {
		return nil, desc, errorf("service %s has no Handler", key)
	}
	if err := s.Settings.Check(); err != nil {
		return nil, desc, errorf("service %s: Settings: %v", key, err)
	}
	if params := s.Settings.Params(); len(params) > 0 {
		desc.Params = params
	}
	svc := &service{key: key, methods: make(map[string]*method)}
	hv := reflect.ValueOf(s.Handler)
	ht := hv.Type()
	for i := range ht.NumMethod() {
		m, err := newMethod(ht.Method(i), hv.Method(i), s.Signatures)
		if err != nil {
			return nil, desc, errorf("service %s: %s.%s: %v", key, ht, ht.Method(i).Name, err)
		}
		if m == nil {
			continue
		}
		if svc.methods[m.name] != nil {
			return nil, desc, errorf("service %s: two methods map to %s", key, m.name)
		}
		svc.methods[m.name] = m
		svc.methods[ht.Method(i).Name] = m
		desc.Methods = append(desc.Methods, wire.Method{Name: m.name, ParamTypes: m.javaSig.Params, ReturnType: m.javaSig.Returns})
	}
	if len(desc.Methods) == 0 {
		return nil, desc, errorf("service %s: %s has no methods of the form Name(ctx context.Context, args...) (T, error) or error", key, ht)
	}
	for name := range s.Signatures {
		if svc.methods[name] == nil {
			return nil, desc, errorf("service %s: Signatures names %s, which is not a method of %s", key, name, ht)
		}
	}
	return svc, desc, nil
}

// newMethod returns nil for methods that are not Dubbo methods (no ctx first).
func newMethod(rm reflect.Method, fn reflect.Value, overrides map[string]Signature) (*method, error) {
	ft := fn.Type()
	if ft.NumIn() == 0 || ft.In(0) != ctxType {
		return nil, nil
	}
	if ft.IsVariadic() {
		return nil, errors.New("variadic methods cannot be served; take a slice")
	}
	m := &method{name: lowerCamel(rm.Name), fn: fn}
	m.strFn, _ = fn.Interface().(func(context.Context, string) (string, error))
	switch {
	case ft.NumOut() == 1 && ft.Out(0) == errType:
		m.javaSig.Returns = "void"
	case ft.NumOut() == 2 && ft.Out(1) == errType:
		m.result = true
	default:
		return nil, errors.New("must return (T, error) or error")
	}
	for i := 1; i < ft.NumIn(); i++ {
		m.params = append(m.params, ft.In(i))
	}
	o, hasOverride := overrides[m.name]
	if hasOverride && o.Params != nil && len(o.Params) != len(m.params) {
		return nil, fmt.Errorf("Signatures gives %d parameter types for %d parameters", len(o.Params), len(m.params))
	}
	for i, pt := range m.params {
		if hasOverride && o.Params != nil {
			m.javaSig.Params = append(m.javaSig.Params, o.Params[i])
			continue
		}
		jt, err := javaType(pt, map[reflect.Type]bool{})
		if err != nil {
			return nil, fmt.Errorf("parameter %d: %w", i+1, err)
		}
		m.javaSig.Params = append(m.javaSig.Params, jt)
	}
	if m.javaSig.Params == nil {
		m.javaSig.Params = []string{}
	}
	switch {
	case hasOverride && o.Returns != "":
		m.javaSig.Returns = o.Returns
	case m.result:
		jt, err := javaType(ft.Out(0), map[reflect.Type]bool{})
		if err != nil {
			return nil, fmt.Errorf("result: %w", err)
		}
		m.javaSig.Returns = jt
	}
	return m, nil
}

// lowerCamel maps a Go method name to Dubbo's: SayHello → sayHello.
func lowerCamel(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

var boxes = map[reflect.Kind]string{
	reflect.String: "java.lang.String", reflect.Bool: "java.lang.Boolean",
	reflect.Int8: "java.lang.Byte", reflect.Int16: "java.lang.Short",
	reflect.Int32: "java.lang.Integer", reflect.Int64: "java.lang.Long", reflect.Int: "java.lang.Long",
	reflect.Float32: "java.lang.Float", reflect.Float64: "java.lang.Double",
}

var primitives = map[reflect.Kind]string{
	reflect.String: "java.lang.String", reflect.Bool: "boolean",
	reflect.Int8: "byte", reflect.Int16: "short", reflect.Int32: "int",
	reflect.Int64: "long", reflect.Int: "long",
	reflect.Float32: "float", reflect.Float64: "double",
}

// javaType derives the Java type name of a Go type, registering POJOs with
// hessian on the way so that they decode into their Go types.
func javaType(t reflect.Type, seen map[reflect.Type]bool) (string, error) {
	switch {
	case t == timeType:
		return "java.util.Date", nil
	case t == bytesType:
		return "byte[]", nil
	}
	if name, ok := pojoName(t); ok {
		if err := registerPOJO(t, seen); err != nil {
			return "", err
		}
		return name, nil
	}
	if j, ok := primitives[t.Kind()]; ok {
		return j, nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		if j, ok := boxes[t.Elem().Kind()]; ok {
			return j, nil
		}
	case reflect.Slice, reflect.Array:
		if _, err := javaType(t.Elem(), seen); err != nil {
			return "", err
		}
		return "java.util.List", nil
	case reflect.Map:
		if _, err := javaType(t.Key(), seen); err != nil {
			return "", err
		}
		if _, err := javaType(t.Elem(), seen); err != nil {
			return "", err
		}
		return "java.util.Map", nil
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return "java.lang.Object", nil
		}
	case reflect.Struct:
		return "", fmt.Errorf("struct %s has no JavaClassName() string method; add one returning the Java class it stands for", t)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "", fmt.Errorf("%s has no Java counterpart (Java has no unsigned integers); use int32 or int64", t)
	}
	return "", fmt.Errorf("%s has no Java counterpart; use string, int32, int64, float64, bool, []byte, slices, maps, or a struct with JavaClassName()", t)
}

// pojoName is the Java class of a struct or pointer to struct with a
// JavaClassName method (on the value or the pointer).
func pojoName(t reflect.Type) (string, bool) {
	base := t
	if base.Kind() == reflect.Pointer {
		base = base.Elem()
	}
	if base.Kind() != reflect.Struct || !reflect.PointerTo(base).Implements(pojoType) {
		return "", false
	}
	return reflect.New(base).Interface().(hessian.POJO).JavaClassName(), true
}

func registerPOJO(t reflect.Type, seen map[reflect.Type]bool) error {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if seen[t] {
		return nil
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Tag.Get("hessian") == "-" {
			continue
		}
		if _, err := javaType(f.Type, seen); err != nil {
			return fmt.Errorf("field %s.%s: %w", t, f.Name, err)
		}
	}
	hessian.RegisterPOJO(reflect.New(t).Interface().(hessian.POJO))
	return nil
}

// method is the method inv names, or nil.
// lookup finds the service and method inv names; either may be nil.
func (d *Dispatcher) lookup(inv *rpc.Invocation) (*service, *method) {
	svc := d.services[wire.IDOf(inv.Service, inv.Version, inv.Group)]
	if svc == nil {
		return nil, nil
	}
	return svc, svc.methods[inv.Method]
}

// Invoke calls the method inv names. Unknown services and methods are
// errors wrapping rpc.ErrServiceNotFound; bad arguments, returned errors
// and panics are business exceptions in the Result.
func (d *Dispatcher) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	svc, m := d.lookup(inv)
	return d.invoke(ctx, inv, svc, m)
}

// invoke is Invoke with the lookup done.
func (d *Dispatcher) invoke(ctx context.Context, inv *rpc.Invocation, svc *service, m *method) (*rpc.Result, error) {
	if svc == nil {
		return nil, &rpc.CallError{Kind: rpc.ErrServiceNotFound, Service: inv.Service, Method: inv.Method,
			Detail: "this plugin does not serve " + url.ServiceKey(inv.Service, inv.Version, inv.Group)}
	}
	if m == nil {
		return nil, &rpc.CallError{Kind: rpc.ErrServiceNotFound, Service: inv.Service, Method: inv.Method,
			Detail: "service " + svc.key + " has no method " + inv.Method}
	}
	if arg, ok := m.strArg(inv); ok {
		out, ex := m.callStr(ctx, svc.key, arg)
		if ex != nil {
			return &rpc.Result{Exception: ex}, nil
		}
		return &rpc.Result{Value: out}, nil
	}
	in, ex := m.args(ctx, inv.Args)
	if ex != nil {
		return &rpc.Result{Exception: ex}, nil
	}
	return m.call(svc.key, in), nil
}

func (m *method) args(ctx context.Context, args []any) ([]reflect.Value, *rpc.Exception) {
	if len(args) != len(m.params) {
		return nil, &rpc.Exception{Class: "java.lang.IllegalArgumentException",
			Message: fmt.Sprintf("%s(%s) takes %d arguments, got %d", m.name, strings.Join(m.javaSig.Params, ", "), len(m.params), len(args))}
	}
	in := make([]reflect.Value, 1+len(args))
	// A Value of the interface type itself: reflect then need not check,
	// call after call, that ctx's concrete type implements context.Context.
	in[0] = reflect.ValueOf(&ctx).Elem()
	for i, a := range args {
		v, err := convert(a, m.params[i])
		if err != nil {
			return nil, &rpc.Exception{Class: "java.lang.IllegalArgumentException",
				Message: fmt.Sprintf("argument %d of %s (%s): %v", i+1, m.name, m.javaSig.Params[i], err)}
		}
		in[i+1] = v
	}
	return in, nil
}

func (m *method) call(key string, in []reflect.Value) (res *rpc.Result) {
	defer m.recoverPanic(key, &res)
	out := m.fn.Call(in)
	if err, _ := out[len(out)-1].Interface().(error); err != nil {
		return &rpc.Result{Exception: exceptionOf(err)}
	}
	if !m.result {
		return &rpc.Result{}
	}
	return &rpc.Result{Value: out[0].Interface()}
}

// strArg is the argument of a call strFn serves; false for other calls.
func (m *method) strArg(inv *rpc.Invocation) (string, bool) {
	if m == nil || m.strFn == nil || len(inv.Args) != 1 {
		return "", false
	}
	s, ok := inv.Args[0].(string)
	return s, ok
}

// callStr is call for strFn, with the argument it takes. It returns the
// handler's string rather than a Result, which the plugin's own calls
// write out without one.
func (m *method) callStr(ctx context.Context, key, arg string) (out string, ex *rpc.Exception) {
	defer func() {
		if r := recover(); r != nil {
			ex = m.panicked(key, r)
		}
	}()
	out, err := m.strFn(ctx, arg)
	if err != nil {
		return "", exceptionOf(err)
	}
	return out, nil
}

// recoverPanic turns a handler's panic into the exception the caller sees.
func (m *method) recoverPanic(key string, res **rpc.Result) {
	if r := recover(); r != nil {
		*res = &rpc.Result{Exception: m.panicked(key, r)}
	}
}

// panicked logs a handler's panic and returns the exception the caller sees.
func (m *method) panicked(key string, r any) *rpc.Exception {
	slog.Error("handler panicked", "service", key, "method", m.name, "panic", r, "stack", string(debug.Stack()))
	return &rpc.Exception{Class: "java.lang.RuntimeException", Message: fmt.Sprintf("panic in %s.%s: %v", key, m.name, r)}
}

// exceptionOf turns a handler's error into the exception the caller sees.
func exceptionOf(err error) *rpc.Exception {
	var ex *rpc.Exception
	if errors.As(err, &ex) && ex.Class != "" {
		return &rpc.Exception{Class: ex.Class, Message: err.Error()}
	}
	class := "java.lang.RuntimeException"
	var jc interface{ JavaClassName() string }
	if errors.As(err, &jc) && jc.JavaClassName() != "" {
		class = jc.JavaClassName()
	}
	return &rpc.Exception{Class: class, Message: err.Error()}
}

// Signatures returns the Java signatures served for a service, given as
// [group/]interface[:version], by Dubbo method name; nil if it is not
// served. Handler tests use it to check the Java types derived for them.
func (d *Dispatcher) Signatures(service string) map[string]Signature {
	svc := d.services[wire.IDOf(url.ParseServiceKey(service))]
	if svc == nil {
		return nil
	}
	out := make(map[string]Signature, len(svc.methods))
	for _, m := range svc.methods {
		out[m.name] = m.javaSig
	}
	return out
}

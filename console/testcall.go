package console

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/generic"
	"github.com/dubbo-lab/dubbo/node/idl"
	"github.com/dubbo-lab/dubbo/node/jsoncall"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// The test page, /services/{interface}/test: a call of one method made
// as `dubbo call` makes it (package jsoncall), through the console's
// consumer or straight to one provider, with a timeout, a request tag and
// attachments; the page shows the answer, which provider gave it and how
// long it took. The arguments start as the method's parameters' empty
// values (generic.Empty over the service definition's types: a POJO's
// fields, nested), or a protobuf method's empty request message
// (idl.Method.RequestTemplate).

// testPage is the form, and once a call was made (Done) what it answered.
type testPage struct {
	Interface string
	Methods   []MethodView
	Chosen    int // index in Methods
	Args      string
	// The call's settings: Timeout in ms or as a duration ("1.5s"), Tag
	// (dubbo.tag), Attachments (key=value lines), Provider (host:port,
	// "" for any).
	Timeout, Tag, Attachments, Provider string
	// Providers are the enabled providers of the chosen method's version
	// and group.
	Providers []string
	// Classes are the classes of the chosen method's parameters, with
	// their properties' types; Proto the request message of a protobuf
	// method.
	Classes []classView
	Proto   string

	Done       bool
	Result     string
	Error      *errorDetail
	Class      string // the exception's Java class
	Types      string // the parameter types the call used
	AnsweredBy string // the provider's address, or "mock"
	Elapsed    string
}

func (testPage) name() string    { return "test" }
func (p testPage) title() string { return "Test " + p.Interface }

// classView is a class of a service definition: its properties and their
// Java types.
type classView struct {
	Name  string
	Props []propView
}

type propView struct{ Name, Type string }

// maxClasses bounds the classes the test page describes.
const maxClasses = 20

// testedService is the service of the test page's request, and its
// methods.
func (c *Console) testedService(ec echo.Context) (serviceState, []MethodView, error) {
	ctx := ec.Request().Context()
	s, err := c.serviceState(ctx, param(ec, "interface"))
	if err != nil {
		return s, nil, err
	}
	ms, err := c.methodsOf(ctx, s, nil, nil)
	return s, ms, err
}

func (c *Console) pageTest(ec echo.Context) error {
	ctx := ec.Request().Context()
	iface := param(ec, "interface")
	s, ms, err := c.testedService(ec)
	if err != nil {
		return err
	}
	p := testPage{Interface: iface, Methods: ms, Args: "[]"}
	if i, err := strconv.Atoi(ec.QueryParam("m")); err == nil && i >= 0 && i < len(ms) {
		p.Chosen = i
	} else if m := ec.QueryParam("method"); m != "" {
		p.Chosen = max(0, slices.IndexFunc(ms, func(mv MethodView) bool { return mv.Name == m }))
	}
	if len(ms) > 0 {
		c.describeMethod(ctx, s, &p)
	}
	return c.render(ec, http.StatusOK, p)
}

// describeMethod fills the page's starting arguments, the classes of the
// chosen method's parameters and its providers.
func (c *Console) describeMethod(ctx context.Context, s serviceState, p *testPage) {
	m := p.Methods[p.Chosen]
	ps := c.providersOf(s, &m.Version, &m.Group)
	p.Providers = enabledAddresses(ps)
	if pm, err := c.protoMethod(ctx, p.Interface, m, ps); err == nil {
		p.Proto = pm.RequestType()
		p.Args = "[" + string(pm.RequestTemplate()) + "]"
		return
	}
	if !m.Typed {
		return
	}
	def, err := c.rules.GetServiceDefinition(ctx, p.Interface, m.Version, m.Group)
	if err != nil {
		c.log.Debug("no service definition for the test page's arguments", "interface", p.Interface, "err", err)
		return
	}
	props := func(class string) map[string]string {
		for _, t := range def.Types {
			if t.Type == class {
				return t.Properties
			}
		}
		return nil
	}
	args := make([]any, len(m.ParameterTypes))
	for i, t := range m.ParameterTypes {
		v, err := generic.Empty(t, props)
		if err != nil {
			return
		}
		args[i] = generic.ToJSON(v)
	}
	if b, err := json.MarshalIndent(args, "", "  "); err == nil {
		p.Args = string(b)
	}
	p.Classes = classesOf(def, m.ParameterTypes)
}

// enabledAddresses are the addresses of the providers that take calls.
func enabledAddresses(ps []ProviderView) []string {
	var out []string
	for _, pv := range ps {
		if pv.Enabled && !pv.Stale && !slices.Contains(out, pv.Address) {
			out = append(out, pv.Address)
		}
	}
	return out
}

// classesOf are the classes types use, through their properties too, as
// def describes them.
func classesOf(def *metadata.ServiceDefinition, types []string) []classView {
	var out []classView
	todo := slices.Clone(types)
	seen := map[string]bool{}
	for len(todo) > 0 && len(out) < maxClasses {
		t := strings.TrimSuffix(todo[0], "[]")
		todo = todo[1:]
		if seen[t] {
			continue
		}
		seen[t] = true
		i := slices.IndexFunc(def.Types, func(d metadata.TypeDefinition) bool { return d.Type == t })
		if i < 0 || len(def.Types[i].Properties) == 0 {
			continue
		}
		cv := classView{Name: t}
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range def.Types[i].Properties {
				if !yield(k) {
					return
				}
			}
		}) {
			typ := def.Types[i].Properties[name]
			cv.Props = append(cv.Props, propView{Name: name, Type: typ})
			todo = append(todo, typ)
		}
		out = append(out, cv)
	}
	return out
}

// protoMethod is m as a protobuf method, when its service is one: its
// tri:// providers (among ps) describe it.
func (c *Console) protoMethod(ctx context.Context, iface string, m MethodView, ps []ProviderView) (*idl.Method, error) {
	if !slices.ContainsFunc(ps, func(p ProviderView) bool { return strings.HasPrefix(p.URL, "tri://") }) {
		return nil, idl.ErrNoDescriptor
	}
	svc, err := c.call.ProtoService(ctx, iface, m.Version, m.Group)
	if err != nil {
		return nil, err
	}
	return idl.MethodOf(svc, m.Name)
}

// formTest makes the call the form describes and shows what it answered.
func (c *Console) formTest(ec echo.Context) error {
	ctx := ec.Request().Context()
	iface := param(ec, "interface")
	s, ms, err := c.testedService(ec)
	if err != nil {
		return err
	}
	p := testPage{Interface: iface, Methods: ms, Args: ec.FormValue("args"), Timeout: strings.TrimSpace(ec.FormValue("timeout")),
		Tag: strings.TrimSpace(ec.FormValue("tag")), Attachments: ec.FormValue("attachments"), Provider: ec.FormValue("provider"), Done: true}
	i, err := strconv.Atoi(ec.FormValue("method"))
	if err != nil || i < 0 || i >= len(ms) {
		return badRequest("pick a method")
	}
	p.Chosen = i
	m := ms[i]
	ps := c.providersOf(s, &m.Version, &m.Group)
	p.Providers = enabledAddresses(ps)
	protocol := ""
	if p.Provider != "" {
		i := slices.IndexFunc(ps, func(pv ProviderView) bool { return pv.Address == p.Provider })
		if i < 0 {
			return badRequest("%s is not a provider of %s", p.Provider, iface)
		}
		protocol, _, _ = strings.Cut(ps[i].URL, "://")
	}
	res, err := c.testCall(ctx, &p, m, ps, protocol)
	if err != nil {
		d := errorDetail{Kind: rpc.ErrorKind(err), Message: err.Error()}
		var ex *rpc.Exception
		if errors.As(err, &ex) {
			d.Message, p.Class = ex.Message, ex.Class
		}
		var ae *apiErr
		if errors.As(err, &ae) {
			d.Kind = ae.kind
		}
		p.Error = &d
	} else {
		p.Result = res
	}
	return c.render(ec, http.StatusOK, p)
}

// testCall makes the call of p's form to method m (at p.Provider over
// protocol, when one is picked; ps are m's providers) and returns its
// result as indented JSON.
func (c *Console) testCall(ctx context.Context, p *testPage, m MethodView, ps []ProviderView, protocol string) (string, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal([]byte(cmp.Or(strings.TrimSpace(p.Args), "[]")), &raws); err != nil {
		return "", badRequest("the arguments are not a JSON array: %v", err)
	}
	call := jsoncall.Call{Interface: p.Interface, Version: m.Version, Group: m.Group, Method: m.Name, Args: raws, Generic: true,
		Attachments: map[string]string{}}
	if p.Timeout != "" {
		d, err := timeoutOf(p.Timeout)
		if err != nil {
			return "", err
		}
		call.Timeout = d
	}
	if p.Tag != "" {
		call.Attachments["dubbo.tag"] = p.Tag
	}
	for _, line := range strings.Split(p.Attachments, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return "", badRequest("attachment %q: write key=value, one a line", line)
		}
		call.Attachments[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	if _, err := c.protoMethod(ctx, p.Interface, m, ps); err != nil && m.Typed {
		call.Types = m.ParameterTypes // a Java method of known types
	}
	var invoker rpc.Invoker = c.call
	resolvers := jsoncall.Resolvers{Services: c.call, Types: c.call}
	if p.Provider != "" {
		cons, err := c.directConsumer(ctx, consumer.ReferenceConfig{Interface: p.Interface, Version: m.Version, Group: m.Group,
			URL: protocol + "://" + p.Provider})
		if err != nil {
			return "", err
		}
		defer cons.Close()
		invoker, resolvers.Services = cons, cons
	}
	prep, err := jsoncall.Prepare(ctx, resolvers, call, c.log)
	if err != nil {
		return "", err
	}
	if prep.Streaming() {
		return "", badRequest("%s is a %s protobuf method: the test page calls unary methods (dubbo call streams)", m.Name, prep.Proto.Kind())
	}
	p.Types = strings.Join(prep.Types, ", ")
	start := time.Now()
	res, err := jsoncall.Invoke(ctx, invoker, prep.Invocation)
	p.Elapsed = time.Since(start).Round(10 * time.Microsecond).String()
	if res != nil {
		p.AnsweredBy = res.Provider
	}
	if err != nil {
		return "", err
	}
	v, err := prep.Result(res)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return "", fmt.Errorf("result as JSON: %w", err)
	}
	return strings.TrimSpace(b.String()), nil
}

// timeoutOf reads a timeout given as milliseconds or a Go duration.
func timeoutOf(s string) (time.Duration, error) {
	if ms, err := strconv.Atoi(s); err == nil && ms > 0 {
		return time.Duration(ms) * time.Millisecond, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < time.Millisecond {
		return 0, badRequest("timeout %q: give milliseconds (500) or a duration (1.5s)", s)
	}
	return d, nil
}

// directConsumer is a consumer of its own, without registry, for one call
// made straight to the provider rc names (rc.URL), connected (or given up
// on after readyWait). Close it after the call.
func (c *Console) directConsumer(ctx context.Context, rc consumer.ReferenceConfig) (*consumer.Consumer, error) {
	cons, err := consumer.New(ctx, consumer.Config{Application: consoleApplication}, consumer.Options{Logger: c.opts.Logger, NoStatistics: true})
	if err != nil {
		return nil, fmt.Errorf("consumer for a call to %s: %w", rc.URL, err)
	}
	check := false
	rc.Check = &check
	ref, err := cons.Reference(ctx, rc)
	if err != nil {
		cons.Close()
		return nil, err
	}
	ref.WaitAvailable(ctx, readyWait)
	return cons, nil
}

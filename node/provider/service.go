package provider

import (
	"crypto/rand"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/provider/settings"
	"github.com/dubbo-lab/dubbo/node/registry/metadata"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/transport"
	"github.com/dubbo-lab/dubbo/node/url"
)

// KeyHeartbeat is the provider URL parameter with the provider's heartbeat
// in milliseconds, written when it is not the default.
const KeyHeartbeat = "heartbeat"

// Release is the Dubbo release we register as: Java consumers read it to
// decide which protocol features a provider has, and we speak 3.3's.
const Release = "3.3.0"

// Service is one interface a provider serves.
type Service struct {
	// Interface is the Java interface name, e.g. org.example.Greeter. Required.
	Interface string
	// Version and Group select among implementations. Default none.
	Version, Group string
	// Methods describe the interface; calls of other methods are refused.
	Methods []Method
	// Invoker runs the calls. It receives the invocation with arguments
	// converted to the declared Java types (int → int32, long → int64,
	// Map → map[string]any when the keys are strings) and returns the
	// value, a *rpc.Exception result, or an error: an *rpc.Exception error
	// is a business exception, any other error a failure of the service
	// (answered with SERVICE_ERROR, so consumers fail over). Required,
	// unless Proto is set.
	Invoker rpc.Invoker
	// Proto makes the service a protobuf (IDL) one, served over Triple
	// only: its descriptor and the way to its handlers (triple_proto.go).
	// Methods then name its rpcs, each with its request message as the
	// one parameter type and its response message as the return type.
	// Default nil: a Java-interface service.
	Proto *ProtoService
	// Params are the service's settings as Dubbo URL parameters, by Java's
	// names (weight, dubbo.tag, timeout and warmup and delay in ms,
	// retries, loadbalance, token, executes, actives, or any other); a
	// plugin's sdk.Service settings arrive here. The [[provider.services]]
	// table that matches the service wins over them, and they win over
	// the node's provider.weight and provider.token. Default none.
	Params map[string]string
}

// Method is one method of a Service.
type Method struct {
	Name string
	// ParamTypes are Java type names: "java.lang.String", "int", "java.util.Map".
	ParamTypes []string
	// ReturnType is a Java type name; "void" or "" for none. Return values
	// are converted to it (a Go int returned for "int" is sent as a Java int).
	ReturnType string
}

// exporter is one exported service: what the request routers look up.
type exporter struct {
	key   string // [group/]interface[:version]
	svc   Service
	token string // "" = none
	// ownToken: token was generated (token=true), so a replacement of
	// the service keeps it: consumers holding the URL it replaces call on.
	ownToken bool
	methods  map[string][]Method
	// delay postpones the export (the delay parameter).
	delay time.Duration
	// running counts the calls of each method in flight, for executes,
	// whatever protocol they came over; the map is fixed at export.
	running map[string]*atomic.Int32
	// eps are the service on each protocol it is served on, in the
	// provider's order of protocols; fixed at export.
	eps []*endpoint
	// rpcs are a protobuf service's methods as Triple serves them, by
	// name; nil for a Java-interface service.
	rpcs map[string]*protoMethod
	// wrapped are a Java-interface service's methods as Triple serves
	// them in wrapper mode, by name ($echo and $invoke too); nil when it
	// is not served on tri.
	wrapped map[string]*wrapperMethod
}

// endpoint is a service on one of the provider's protocols.
type endpoint struct {
	srv *server
	url *url.URL // as exported, before override rules
	// published is the URL in the registry: url after the override rules,
	// nil while a rule disables the service or it is offline. Written with
	// regMu and mu held.
	published *url.URL
	// limits are the executes of the URL consumers see (the override
	// rules included); replaced when that URL changes.
	limits atomic.Pointer[executeLimits]
}

// endpoint is e's endpoint on s, nil when e is not served there.
func (e *exporter) endpoint(s *server) *endpoint {
	for _, ep := range e.eps {
		if ep.srv == s {
			return ep
		}
	}
	return nil
}

// url is the service's URL on its first protocol, for the settings every
// protocol's URL shares.
func (e *exporter) url() *url.URL { return e.eps[0].url }

// publishedURLs are the URLs of e in the registry; none for a nil e.
func (e *exporter) publishedURLs() []*url.URL {
	if e == nil {
		return nil
	}
	var out []*url.URL
	for _, ep := range e.eps {
		if ep.published != nil {
			out = append(out, ep.published)
		}
	}
	return out
}

// protocols names the protocols e is served on.
func (e *exporter) protocols() []string {
	out := make([]string, len(e.eps))
	for i, ep := range e.eps {
		out[i] = ep.srv.cfg.Name
	}
	return out
}

func (p *Provider) newExporter(svc Service) (*exporter, error) {
	if svc.Interface == "" || svc.Invoker == nil && svc.Proto == nil {
		return nil, fmt.Errorf("provider: service needs an Interface and an Invoker (got interface %q)", svc.Interface)
	}
	e := &exporter{
		key:     url.ServiceKey(svc.Interface, svc.Version, svc.Group),
		svc:     svc,
		methods: make(map[string][]Method, len(svc.Methods)),
		running: make(map[string]*atomic.Int32, len(svc.Methods)),
	}
	for _, m := range svc.Methods {
		if m.Name == "" {
			return nil, fmt.Errorf("provider: service %s has a method without a name", e.key)
		}
		if _, err := protocol.Descriptor(m.ParamTypes); err != nil {
			return nil, fmt.Errorf("provider: service %s method %s: %w", e.key, m.Name, err)
		}
		e.methods[m.Name] = append(e.methods[m.Name], m)
		e.running[m.Name] = new(atomic.Int32)
	}
	if err := CheckParams(svc.Params); err != nil {
		return nil, fmt.Errorf("provider: service %s: %w", e.key, err)
	}
	params := p.settingsParams(svc)
	switch strings.ToLower(params[settings.KeyToken]) {
	case "", "false", "0":
		delete(params, settings.KeyToken)
	case "true", "default":
		e.token, e.ownToken = newUUID(), true
		p.mu.RLock()
		if old := p.exporters[e.key]; old != nil && old.ownToken {
			e.token = old.token
		}
		p.mu.RUnlock()
		params[settings.KeyToken] = e.token
	default:
		e.token = params[settings.KeyToken]
	}
	if ms, err := strconv.Atoi(params[settings.KeyDelay]); err == nil && ms > 0 {
		e.delay = time.Duration(ms) * time.Millisecond
	}
	servers, err := p.serversFor(e)
	if err != nil {
		return nil, fmt.Errorf("provider: service %s: %w", e.key, err)
	}
	for _, s := range servers {
		ep := &endpoint{srv: s, url: p.providerURL(e, s, params)}
		ep.setLimits(ep.url)
		e.eps = append(e.eps, ep)
	}
	if svc.Proto != nil {
		if e.rpcs, err = protoMethods(p, e, e.eps[0]); err != nil { // served on tri only
			return nil, fmt.Errorf("provider: service %s: %w", e.key, err)
		}
	} else if tri := e.endpoint(p.serverOf(ProtocolTriple)); tri != nil {
		e.wrapped = wrapperMethods(p, e, tri)
	}
	return e, nil
}

// serversFor are the provider's servers e is served on: those of the
// protocols that can carry it (a protobuf service goes over tri only),
// narrowed to the ones its [[provider.services]] table names.
func (p *Provider) serversFor(e *exporter) ([]*server, error) {
	var want []string
	if sc := p.cfg.serviceConfig(e.svc.Interface, e.svc.Version, e.svc.Group); sc != nil {
		want = sc.Protocols
	}
	var out []*server
	for _, s := range p.servers {
		if (e.svc.Proto == nil || s.cfg.Name == ProtocolTriple) && (len(want) == 0 || slices.Contains(want, s.cfg.Name)) {
			out = append(out, s)
		}
	}
	switch {
	case len(out) > 0:
		return out, nil
	case e.svc.Proto != nil:
		return nil, fmt.Errorf("a protobuf service is served over tri only, and this provider serves %s%s; set protocol.name = \"tri\" or add [protocols.tri]",
			strings.Join(p.protocolNames(), ", "), wantNote(want))
	}
	return nil, fmt.Errorf("this provider serves %s, not %s as its [[provider.services]] protocols say", strings.Join(p.protocolNames(), ", "), strings.Join(want, ", "))
}

func wantNote(want []string) string {
	if len(want) == 0 {
		return ""
	}
	return " (its [[provider.services]] protocols: " + strings.Join(want, ", ") + ")"
}

// protocolNames are the protocols the provider serves.
func (p *Provider) protocolNames() []string {
	out := make([]string, len(p.servers))
	for i, s := range p.servers {
		out[i] = s.cfg.Name
	}
	return out
}

// settingsParams are the service's URL parameters from its settings: the
// node's defaults (provider.weight, provider.token), the service's own
// Params over them, the matching [[provider.services]] table over those.
func (p *Provider) settingsParams(svc Service) map[string]string {
	out := map[string]string{}
	if p.cfg.Weight != nil {
		out[settings.KeyWeight] = strconv.Itoa(*p.cfg.Weight)
	}
	if p.cfg.Token != "" {
		out[settings.KeyToken] = p.cfg.Token
	}
	maps.Copy(out, svc.Params)
	if sc := p.cfg.serviceConfig(svc.Interface, svc.Version, svc.Group); sc != nil {
		maps.Copy(out, sc.Params())
	}
	return out
}

// providerURL builds the URL a Java 3.3 provider registers for e on s
// (PROTOCOLS.md C.2), with the service's settings.
func (p *Provider) providerURL(e *exporter, s *server, settingsParams map[string]string) *url.URL {
	names := make([]string, 0, len(e.methods))
	for n := range e.methods {
		names = append(names, n)
	}
	sort.Strings(names)
	serialization := p.cfg.Protocol.Serialization
	if serialization == "" {
		serialization = "hessian2"
	}
	params := map[string]string{"deprecated": "false", "dynamic": "true"}
	if e.svc.Proto == nil {
		// Not for a protobuf service: dubbo-go's consumer takes the
		// provider's serialization over its own, and would encode its
		// messages with hessian.
		params["serialization"], params["prefer.serialization"] = serialization, serialization
	}
	if s.cfg.Name == ProtocolTriple {
		// Dubbo's defaults, written as dubbo-go's Triple providers write
		// them, for its consumers.
		params["cluster"], params[settings.KeyLoadBalance] = "failover", "random"
	}
	if p.cfg.RegisterMode != RegisterInterface {
		params["service-name-mapping"] = "true"
	}
	if p.cfg.Protocol.Dispatcher != "" {
		params["dispatcher"] = p.cfg.Protocol.Dispatcher
	}
	if p.cfg.Protocol.ThreadPool != "" {
		params["threadpool"] = p.cfg.Protocol.ThreadPool
	}
	if p.cfg.Protocol.Threads > 0 {
		params[KeyThreads] = strconv.Itoa(p.cfg.Protocol.Threads)
	}
	// Consumers ping at the provider's heartbeat, which they read here
	// (milliseconds, as Java writes it): one pinging at the default while
	// this provider closes connections silent for three of its shorter
	// heartbeats would lose its connections between calls.
	if hb := s.cfg.Heartbeat; s.cfg.Name == ProtocolDubbo && hb != transport.DefaultHeartbeat {
		params[KeyHeartbeat] = strconv.FormatInt(hb.Milliseconds(), 10)
	}
	maps.Copy(params, settingsParams)
	// What the service itself says last: no setting may change it
	// (CheckParams refuses them anyway).
	maps.Copy(params, map[string]string{
		"anyhost":        strconv.FormatBool(s.anyhost),
		"application":    p.cfg.Application,
		"dubbo":          protocolVersion,
		"generic":        "false",
		url.KeyInterface: e.svc.Interface,
		"methods":        strings.Join(names, ","),
		url.KeyPID:       strconv.Itoa(os.Getpid()),
		"release":        Release,
		"side":           "provider",
		url.KeyTimestamp: strconv.FormatInt(time.Now().UnixMilli(), 10),
	})
	if e.svc.Version != "" {
		params[url.KeyVersion] = e.svc.Version
	}
	if e.svc.Group != "" {
		params[url.KeyGroup] = e.svc.Group
	}
	return url.New(s.cfg.Name, s.host, s.port, e.svc.Interface, params)
}

// metadataServiceParams describe the MetadataService endpoint in the
// instance, with the heartbeat its connections must keep when it is not
// the default: an application-level consumer's first connection to this
// provider is the one it reads the metadata over.
func (p *Provider) metadataServiceParams() map[string]string {
	params := metadata.DefaultMetadataServiceParams(p.main().port, Release)
	params["protocol"] = p.main().cfg.Name
	if hb := p.cfg.Protocol.Heartbeat; hb != transport.DefaultHeartbeat {
		params[KeyHeartbeat] = strconv.FormatInt(hb.Milliseconds(), 10)
	}
	return params
}

// definition is the service definition published to the metadata report,
// which generic callers read for parameter types.
func (e *exporter) definition() *metadata.ServiceDefinition {
	d := &metadata.ServiceDefinition{
		CanonicalName: e.svc.Interface,
		Types:         []metadata.TypeDefinition{},
		Annotations:   []string{},
		Parameters:    e.url().Params(),
	}
	var types []string
	for _, m := range e.svc.Methods {
		ret := m.ReturnType
		if ret == "" {
			ret = "void"
		}
		d.Methods = append(d.Methods, metadata.MethodDefinition{
			Name:           m.Name,
			ParameterTypes: append([]string{}, m.ParamTypes...),
			ReturnType:     ret,
			Parameters:     []metadata.TypeDefinition{},
			Annotations:    []string{},
		})
		for _, t := range append(slices.Clone(m.ParamTypes), ret) {
			if !slices.Contains(types, t) {
				types = append(types, t)
			}
		}
	}
	sort.Strings(types)
	for _, t := range types {
		d.Types = append(d.Types, metadata.TypeDefinition{Type: t})
	}
	return d
}

// method finds the method a request names: by name, and by parameter types
// when the name is overloaded.
func (e *exporter) method(name string, types []string) (Method, bool) {
	ms := e.methods[name]
	if len(ms) == 1 {
		return ms[0], true
	}
	for _, m := range ms {
		if slices.Equal(m.ParamTypes, types) {
			return m, true
		}
	}
	return Method{}, false
}

// newUUID is a random (version 4) UUID, Dubbo's token when token=true.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func sortURLs(us []*url.URL) {
	sort.Slice(us, func(i, j int) bool { return us[i].String() < us[j].String() })
}

func sortStrings(s []string) { sort.Strings(s) }

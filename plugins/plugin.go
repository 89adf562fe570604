package plugins

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

// ServiceDesc is one service a plugin serves, as it described it: a Dubbo
// service (an sdk.Service), called with Invoke, or a protobuf service (an
// sdk.ProtoService: Proto is set), called with CallProto and OpenStream.
type ServiceDesc struct {
	// Interface is the Java interface, or the protobuf service's full name
	// (greet.GreetService).
	Interface string
	Version   string // "" when none
	Group     string // "" when none
	Methods   []MethodDesc
	// Params are the service's settings as Dubbo URL parameters (its
	// sdk.Service Settings), for its provider URL; nil when none.
	Params map[string]string
	// Proto is the protobuf service, nil for a Dubbo one. Files holds its
	// file and every file that one imports, as the plugin sent them, for
	// serving reflection and translating JSON.
	Proto protoreflect.ServiceDescriptor
	Files *protoregistry.Files
}

// Key is Dubbo's service key, [group/]interface[:version].
func (s ServiceDesc) Key() string { return url.ServiceKey(s.Interface, s.Version, s.Group) }

// Same says whether s and o describe the same service: the same key,
// methods and settings and, for a protobuf service, the same .proto files.
// A new build of a plugin whose services are the same changes nothing its
// owner registered.
func (s ServiceDesc) Same(o ServiceDesc) bool {
	return s.Key() == o.Key() && maps.Equal(s.Params, o.Params) &&
		slices.EqualFunc(s.Methods, o.Methods, func(a, b MethodDesc) bool {
			return a.Name == b.Name && a.ReturnType == b.ReturnType && a.Kind == b.Kind && slices.Equal(a.ParamTypes, b.ParamTypes)
		}) &&
		(s.Proto == nil) == (o.Proto == nil) && (s.Proto == nil || slices.Equal(protoFiles(s.Files), protoFiles(o.Files)))
}

// protoFiles are the files of fs, encoded and sorted, to compare.
func protoFiles(fs *protoregistry.Files) []string {
	var out []string
	fs.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(protodesc.ToFileDescriptorProto(fd))
		if err != nil {
			b = []byte(fd.Path()) // cannot happen for a descriptor that resolved
		}
		out = append(out, string(b))
		return true
	})
	slices.Sort(out)
	return out
}

// MethodDesc is one method: of a Dubbo service with its Java signature,
// e.g. sayHello with ParamTypes [java.lang.String] and ReturnType
// java.lang.String; of a protobuf service with its Kind (its messages are
// in ServiceDesc.Proto).
type MethodDesc struct {
	Name       string
	ParamTypes []string
	ReturnType string // "void" when the method returns nothing
	Kind       rpc.MethodKind
}

// Plugin is one running plugin process. It is an rpc.Invoker for the
// services it described; it is safe for concurrent use.
type Plugin struct {
	cfg      Config
	built    time.Time // the binary's modification time when it started
	log      *slog.Logger
	client   *plugin.Client
	cmd      *exec.Cmd
	conn     *wire.Conn
	link     *wire.Link // carries every call to the plugin, and its calls back
	services []ServiceDesc
	// The services and methods it described, which calls are checked
	// against: one lookup per call. serves holds the index in services.
	serves       map[wire.ServiceID]int
	methods      map[methodID]*method
	protoMethods map[methodID]protoMethod

	// calls holds buffers to encode calls in (*[]byte): the link copies a
	// call as it sends it.
	calls sync.Pool

	// out and errs are the plugin's stdout and stderr (both the raw
	// process stream and the one go-plugin forwards over gRPC).
	out, errs, rawErrs *lineLogger

	stopProc  context.CancelFunc // kills the process (exec.CommandContext)
	done      chan struct{}      // closed once the process has exited
	exitErr   error              // why; written before done is closed
	closing   atomic.Bool
	closeOnce sync.Once
	waited    bool // Close saw go-plugin wait for the process

	wg sync.WaitGroup // the exit watcher and the callback server

	// next took over from the plugin when it was swapped out (handOver):
	// the calls that reach it from then on, having raced the switch, go
	// there. nil until then.
	next atomic.Pointer[Plugin]
}

// CheckPath says whether path names a file Start can launch: one that
// exists, is not a directory and is executable. The error names the path
// and what is wrong with it.
func CheckPath(path string) error {
	if path == "" {
		return errors.New("the plugin path is empty")
	}
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", path)
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, not a plugin binary", path)
	case fi.Mode()&0o111 == 0:
		return fmt.Errorf("%s is not executable (chmod +x %s)", path, path)
	}
	return nil
}

// Start launches the plugin binary cfg.Path, checks its handshake and asks
// what it serves. ctx bounds the start only (with cfg.StartTimeout); call
// Close to stop the plugin. A binary that is not a handler plugin, exits,
// or describes its services wrongly is refused with an error saying why,
// quoting the last lines of its stderr; nothing it started is left running.
func Start(ctx context.Context, cfg Config) (*Plugin, error) {
	cfg = cfg.withDefaults()
	if cfg.Path == "" {
		return nil, errors.New("plugins: Config.Path is empty")
	}
	if err := CheckPath(cfg.Path); err != nil {
		return nil, fmt.Errorf("plugin %s: %w", cfg.Name, err)
	}
	var built time.Time
	if fi, err := os.Stat(cfg.Path); err == nil {
		built = fi.ModTime()
	}
	log := cfg.Logger.With("plugin", cfg.Name)
	procCtx, stopProc := context.WithCancel(context.Background())
	path := cfg.Path
	if !strings.ContainsRune(path, filepath.Separator) {
		path = "." + string(filepath.Separator) + path // the file CheckPath found, not one in $PATH
	}
	cmd := exec.CommandContext(procCtx, path, cfg.Args...)
	// Built here rather than by go-plugin, which would put the node's
	// environment after cfg.Env and so override it.
	cmd.Env = append(os.Environ(), cfg.Env...)
	ownProcessGroup(cmd)
	nodeEnd, childEnd, err := wire.NewLinkPipes()
	if err != nil {
		stopProc()
		return nil, fmt.Errorf("plugin %s: %w", cfg.Name, err)
	}
	cmd.ExtraFiles = childEnd.Files()
	cmd.Env = append(cmd.Env, childEnd.Env())
	p := &Plugin{
		cfg: cfg, log: log, cmd: cmd, stopProc: stopProc, built: built,
		done:    make(chan struct{}),
		out:     newLineLogger(log, "stdout", slog.LevelInfo),
		errs:    newLineLogger(log, "stderr", slog.LevelWarn),
		rawErrs: newLineLogger(log, "stderr", slog.LevelWarn),
		link:    wire.NewLink(nodeEnd),
	}
	p.link.Start(&hostServer{name: cfg.Name, log: log, invoker: cfg.Host})
	timeout := cfg.StartTimeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	p.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		Plugins:          plugin.PluginSet{wire.PluginName: &wire.GRPCPlugin{}},
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		SkipHostEnv:      true,
		// go-plugin's own log is off: it would parse the plugin's stderr
		// itself and panics on some malformed JSON lines. rawErrs does it.
		Logger:          hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard}),
		Stderr:          p.rawErrs,
		SyncStdout:      p.out,
		SyncStderr:      p.errs,
		StartTimeout:    timeout,
		GRPCDialOptions: wire.DialOptions(),
	})

	// A ctx canceled during the handshake kills the process, which ends it.
	stop := context.AfterFunc(ctx, stopProc)
	err = p.start(ctx, childEnd, timeout)
	if !stop() && err == nil {
		err = ctx.Err()
	}
	if err != nil {
		p.Close()
		// Once Close has waited for the process, ProcessState says how it
		// ended, if it ran.
		if st := cmd.ProcessState; p.waited && p.conn == nil && st != nil && st.Exited() {
			err = fmt.Errorf("it exited with status %d before the handshake", st.ExitCode())
		}
		return nil, fmt.Errorf("plugin %s (%s) refused: %w%s", cfg.Name, cfg.Path, err, p.stderrHint())
	}
	log.Info("plugin started", "pid", p.Pid(), "services", len(p.services))
	return p, nil
}

func (p *Plugin) start(ctx context.Context, childEnd wire.ChildEnds, timeout time.Duration) error {
	cp, err := p.client.Client()
	childEnd.Close() // the plugin has its own copy, or never started
	if err != nil {
		// go-plugin's first line says what went wrong; the rest is advice
		// about its own protocol.
		msg, _, _ := strings.Cut(err.Error(), "\n")
		if strings.HasPrefix(msg, "timeout") {
			msg += fmt.Sprintf(" (%v)", timeout)
		}
		return fmt.Errorf("handshake failed: %s", strings.TrimSpace(msg))
	}
	raw, err := cp.Dispense(wire.PluginName)
	if err != nil {
		return fmt.Errorf("handshake failed: %w", err)
	}
	p.conn = raw.(*wire.Conn)

	p.wg.Add(2)
	go p.watchExit()
	go p.watchLink()

	dctx, cancel := context.WithTimeout(ctx, p.cfg.StartTimeout)
	defer cancel()
	b, err := p.conn.Handler.Describe(dctx)
	if err != nil {
		return fmt.Errorf("describe failed: %w", err)
	}
	d, err := wire.ParseDescription(b)
	if err != nil {
		return fmt.Errorf("bad description of its services: %w", err)
	}
	p.serves, p.methods, p.protoMethods = make(map[wire.ServiceID]int, len(d.Services)), make(map[methodID]*method), make(map[methodID]protoMethod)
	for i, s := range d.Services {
		sd := ServiceDesc{Interface: s.Interface, Version: url.NormalVersion(s.Version), Group: s.Group, Params: s.Params}
		for _, m := range s.Methods {
			sd.Methods = append(sd.Methods, MethodDesc{Name: m.Name, ParamTypes: m.ParamTypes, ReturnType: m.ReturnType, Kind: m.Kind})
		}
		if s.Proto != nil {
			if sd.Files, sd.Proto, err = s.ResolveProto(); err != nil {
				return fmt.Errorf("bad description of %s: %w", sd.Key(), err) // ParseDescription resolved it
			}
		}
		id := wire.IDOf(sd.Interface, sd.Version, sd.Group)
		p.serves[id] = i
		for j, m := range sd.Methods {
			if sd.Proto == nil {
				p.methods[methodID{id, m.Name}] = newMethod(sd, m)
			} else {
				p.protoMethods[methodID{id, m.Name}] = protoMethod{ref: wire.MethodRef{Service: uint32(i), Method: uint32(j)}, kind: m.Kind}
			}
		}
		p.services = append(p.services, sd)
	}
	// Accepted: the plugin's own start hook, if any, runs from now on.
	if err := p.conn.Handler.Start(dctx); err != nil {
		return fmt.Errorf("Start failed: %w", err)
	}
	return nil
}

// watchExit records why the process ended and fails new calls from then on.
func (p *Plugin) watchExit() {
	defer p.wg.Done()
	<-p.conn.Exited.Done()
	// go-plugin cancels Exited after cmd.Wait returned, so ProcessState is set.
	why := "process exited"
	if st := p.cmd.ProcessState; st != nil {
		why = "process exited (" + st.String() + ")"
	}
	p.exitErr = errors.New(why)
	p.out.Flush()
	p.errs.Flush()
	p.rawErrs.Flush()
	close(p.done)
	if p.closing.Load() {
		p.log.Info("plugin stopped")
	} else {
		p.log.Error("plugin died", "reason", why)
	}
}

// watchLink kills a plugin whose link ended while it runs (it sent a
// corrupt frame, or closed its end): it could serve no more calls, and its
// supervisor starts a new one.
func (p *Plugin) watchLink() {
	defer p.wg.Done()
	select {
	case <-p.link.Done():
	case <-p.done:
		return
	}
	// A link that ends because the process died is not news: the exit
	// watcher says so.
	select {
	case <-p.done:
		return
	case <-time.After(50 * time.Millisecond):
	}
	if !p.closing.Load() {
		p.log.Error("the plugin's link broke; killing the plugin", "err", p.link.Err())
		p.stopProc()
	}
}

// Services returns what the plugin serves.
func (p *Plugin) Services() []ServiceDesc { return slices.Clone(p.services) }

// Name is Config.Name.
func (p *Plugin) Name() string { return p.cfg.Name }

// Built is when the binary the plugin runs was written: its modification
// time when it started.
func (p *Plugin) Built() time.Time { return p.built }

// Pid is the plugin's process id.
func (p *Plugin) Pid() int {
	if p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Done is closed when the plugin process has exited, for any reason.
func (p *Plugin) Done() <-chan struct{} { return p.done }

// Err says why the process exited; nil while it runs.
func (p *Plugin) Err() error {
	select {
	case <-p.done:
		return p.exitErr
	default:
		return nil
	}
}

// Close stops the plugin: it asks the process to exit, kills it after 2s,
// and waits for it and for the goroutines serving it. Processes the plugin
// started in its process group are killed too.
func (p *Plugin) Close() error {
	p.closeOnce.Do(func() {
		p.closing.Store(true)
		p.stopHook()
		// go-plugin's Kill asks the plugin to exit and kills it after 2s,
		// then waits for its stdout and stderr to end, which never happens
		// while a process the plugin started holds them. So the whole group
		// is killed once that grace has passed, and at once for a plugin
		// that never completed the handshake, which nothing can ask to exit.
		killed := make(chan struct{})
		go func() {
			p.client.Kill()
			close(killed)
		}()
		if p.conn != nil {
			select {
			case <-killed:
			case <-time.After(killGrace):
			}
		}
		p.stopProc()
		select {
		case <-killed:
			p.waited = true
			p.link.Close()
			p.wg.Wait()
		case <-time.After(killGrace):
			// A process that left the group holds the plugin's output, so
			// go-plugin never sees the plugin end: its goroutines and the
			// exit watcher stay behind, rather than the node hanging.
			p.log.Warn("a process the plugin started outside its process group still holds the plugin's stdout or stderr; not waiting for it")
			p.link.Close()
		}
		// The group outlives its leader while the leader's children live;
		// its id cannot be reused as a pid until they are gone.
		if err := killGroup(p.Pid()); err != nil {
			p.log.Warn("kill the plugin's process group", "err", err)
		}
	})
	return nil
}

// handOver makes next take the calls and streams that reach p from now
// on, those that raced its owner's switch to next; p's calls and streams
// under way go on until they end (drain).
func (p *Plugin) handOver(next *Plugin) {
	p.next.Store(next)
	p.link.Retire()
}

// drain waits until the calls and streams p had under way when it handed
// over have ended, the process has, or ctx; it says whether they ended.
func (p *Plugin) drain(ctx context.Context) bool {
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
	for p.link.InFlight() > 0 {
		select {
		case <-tick.C:
		case <-p.done:
			return true
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// drainPoll is how often drain looks: a swap waits for the old process's
// last calls only to stop it, so a few milliseconds late costs nothing.
const drainPoll = 5 * time.Millisecond

// killGrace is how long Close lets go-plugin stop a plugin (it waits 2s for
// a graceful exit) before it kills the plugin's process group.
const killGrace = 3 * time.Second

// stopHook ends the plugin's start hook, if it runs, while the node still
// answers its calls.
func (p *Plugin) stopHook() {
	if p.conn == nil || p.Err() != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopHookTimeout)
	defer cancel()
	if err := p.conn.Handler.Stop(ctx); err != nil {
		p.log.Debug("plugin did not stop its start hook", "err", err)
	}
}

// stopHookTimeout bounds the wait for a plugin's start hook to return; the
// SDK gives the hook a second.
const stopHookTimeout = 1500 * time.Millisecond

// Invoke calls the plugin. Calls to services or methods it did not describe
// fail with rpc.ErrServiceNotFound without reaching it; when the process is
// gone or dies during the call, the error wraps rpc.ErrConnection at once.
// Generic calls ($invoke) and echo ($echo) are served too.
func (p *Plugin) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	switch inv.Method {
	case protocol.MethodEcho:
		if len(inv.Args) == 1 {
			return &rpc.Result{Value: inv.Args[0]}, nil
		}
	case protocol.MethodInvoke, protocol.MethodInvokeAsync:
		return p.invokeGeneric(ctx, inv)
	}
	type outcome struct {
		res *rpc.Result
		err error
	}
	ch := make(chan outcome, 1)
	p.InvokeAsync(ctx, inv, func(res *rpc.Result, err error) { ch <- outcome{res, err} })
	o := <-ch
	return o.res, o.err
}

// InvokeAsync is Invoke without the wait, for the provider, which then
// needs no pool worker while the plugin works: it sends the call and
// returns; done gets the outcome exactly once, on the goroutine of the
// link that received the reply, so it must not block. Generic and echo
// calls are not served here: the provider asks Invoke for those.
func (p *Plugin) InvokeAsync(ctx context.Context, inv *rpc.Invocation, done func(*rpc.Result, error)) {
	select {
	case <-p.done:
		if next := p.next.Load(); next != nil {
			next.InvokeAsync(ctx, inv, done)
			return
		}
		done(nil, p.callError(inv, rpc.ErrConnection, "plugin "+p.cfg.Name+" is down: "+p.exitErr.Error()))
		return
	default:
	}
	m, err := p.lookup(inv)
	if err != nil {
		if next := p.next.Load(); next != nil {
			next.InvokeAsync(ctx, inv, done) // what it serves counts now
			return
		}
		done(nil, err)
		return
	}
	buf, _ := p.calls.Get().(*[]byte)
	if buf == nil {
		buf = new([]byte)
	}
	var call []byte
	if m.head != nil && inv.Version == m.version && slices.Equal(inv.ParamTypes, m.paramTypes) {
		call, err = wire.AppendCallWithHead((*buf)[:0], m.head, inv)
	} else {
		call, err = wire.AppendCall((*buf)[:0], inv)
	}
	if err != nil {
		done(nil, p.callError(inv, rpc.ErrBadRequest, err.Error()))
		return
	}
	defer func() {
		if cap(call) <= maxPooledCall {
			*buf = call
			p.calls.Put(buf)
		}
	}()
	err = p.link.CallAsync(ctx, call, func(reply []byte, err error) {
		if err != nil && ctx.Err() == nil && !errors.Is(err, wire.ErrTooBig) {
			// The link broke: wait for the exit watcher's reason elsewhere
			// than on the link's goroutine.
			go func() { done(nil, p.transportError(ctx, inv, err)) }()
			return
		}
		if err != nil {
			done(nil, p.transportError(ctx, inv, err))
			return
		}
		done(p.decodeReply(ctx, inv, reply))
	})
	if err != nil { // retired: the call raced the switch to next
		p.next.Load().InvokeAsync(ctx, inv, done)
	}
}

func (p *Plugin) decodeReply(ctx context.Context, inv *rpc.Invocation, reply []byte) (*rpc.Result, error) {
	if late(ctx) {
		return nil, p.callError(inv, rpc.ErrTimeout, "plugin "+p.cfg.Name+" did not answer in time")
	}
	res, err := wire.DecodeReply(reply)
	if err == nil {
		return res, nil
	}
	var ce *rpc.CallError
	if errors.As(err, &ce) {
		ce.Service, ce.Method = inv.Service, inv.Method
		if errors.Is(ce, rpc.ErrServiceNotFound) {
			p.log.Warn("plugin described a method it does not serve", "service", inv.Service, "method", inv.Method, "detail", ce.Detail)
			ce.Detail = "plugin " + p.cfg.Name + " described it but cannot serve it: " + ce.Detail
		}
		return nil, ce
	}
	p.log.Warn("plugin sent a reply that cannot be decoded", "service", inv.Service, "method", inv.Method, "err", err)
	return nil, p.callError(inv, rpc.ErrProvider, "plugin "+p.cfg.Name+" sent a reply that cannot be decoded: "+err.Error())
}

// late says whether an answer came after the caller's deadline. The
// handler got that deadline; an answer that raced it home (typically the
// handler's own "deadline exceeded") is still a timeout for the caller,
// even when ctx's own timer, late on a loaded machine, has not fired yet.
// (A context ends for its deadline only once its Deadline passed: one look
// at the clock tells.)
func late(ctx context.Context) bool {
	if dl, ok := ctx.Deadline(); ok {
		return !time.Now().Before(dl)
	}
	return errors.Is(ctx.Err(), context.DeadlineExceeded)
}

// maxPooledCall bounds the buffers kept for encoding calls: a rare large
// call is not worth its memory kept for every later one.
const maxPooledCall = 64 << 10

type methodID struct {
	wire.ServiceID
	method string
}

// A method the plugin described, with the head of its calls (their names
// and parameter types, wire.AppendCallHead) encoded once: a call that
// names it as described, as most do, spends nothing on encoding them.
type method struct {
	version    string
	paramTypes []string
	head       []byte // nil when a name has no short form
}

func newMethod(s ServiceDesc, m MethodDesc) *method {
	inv := rpc.Invocation{Service: s.Interface, Version: s.Version, Group: s.Group, Method: m.Name, ParamTypes: m.ParamTypes}
	head, ok := wire.AppendCallHead(nil, &inv)
	if !ok {
		head = nil
	}
	return &method{version: s.Version, paramTypes: m.ParamTypes, head: head}
}

// lookup finds the method inv calls, and refuses calls the plugin did not
// say it serves.
func (p *Plugin) lookup(inv *rpc.Invocation) (*method, error) {
	id := wire.IDOf(inv.Service, inv.Version, inv.Group)
	if m := p.methods[methodID{id, inv.Method}]; m != nil {
		return m, nil
	}
	key := url.ServiceKey(inv.Service, inv.Version, inv.Group)
	if i, ok := p.serves[id]; ok {
		if p.services[i].Proto != nil {
			return nil, p.callError(inv, rpc.ErrServiceNotFound, key+" is a protobuf service, not a Dubbo one: call it over Triple")
		}
		return nil, p.callError(inv, rpc.ErrServiceNotFound, fmt.Sprintf("%s has no method %s", key, inv.Method))
	}
	return nil, p.callError(inv, rpc.ErrServiceNotFound, p.notServed(key))
}

// notServed says that the plugin does not serve the service key, and
// what it serves.
func (p *Plugin) notServed(key string) string {
	keys := make([]string, 0, len(p.services))
	for _, s := range p.services {
		keys = append(keys, s.Key())
	}
	serves := "it serves " + strings.Join(keys, ", ")
	if len(keys) == 0 {
		serves = "it serves nothing, it only calls"
	}
	return fmt.Sprintf("plugin %s does not serve %s (%s)", p.cfg.Name, key, serves)
}

// transportError classifies a failed call on the link.
func (p *Plugin) transportError(ctx context.Context, inv *rpc.Invocation, err error) error {
	if ctx.Err() != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return p.callError(inv, rpc.ErrTimeout, "plugin "+p.cfg.Name+" did not answer in time")
		}
		return fmt.Errorf("%s.%s: %w", inv.Service, inv.Method, ctx.Err())
	}
	if errors.Is(err, wire.ErrTooBig) {
		return p.callError(inv, rpc.ErrBadRequest, "plugin "+p.cfg.Name+": "+err.Error())
	}
	return p.callError(inv, rpc.ErrConnection, p.linkBroke(err, "call"))
}

// linkBroke says why the link broke during a call or stream (what): almost
// always the process died, so it gives the exit watcher a moment to say
// how.
func (p *Plugin) linkBroke(err error, what string) string {
	select {
	case <-p.done:
		return "plugin " + p.cfg.Name + " died during the " + what + ": " + p.exitErr.Error()
	case <-time.After(50 * time.Millisecond):
	}
	return "plugin " + p.cfg.Name + ": " + err.Error()
}

func (p *Plugin) callError(inv *rpc.Invocation, kind error, detail string) error {
	return &rpc.CallError{Kind: kind, Service: inv.Service, Method: inv.Method, Detail: detail}
}

// stderrHint quotes the plugin's last stderr lines for a refused start.
func (p *Plugin) stderrHint() string {
	p.rawErrs.Flush()
	tail := p.rawErrs.Tail()
	if len(tail) == 0 {
		return ""
	}
	return "; its stderr ended with: " + strings.Join(tail, " | ")
}

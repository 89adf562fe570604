// Package plugins runs Dubbo handler plugins: business code built as
// separate binaries (hashicorp/go-plugin over gRPC, mutual TLS on) so that a
// crash in it never takes the node down. It has two entry points, one per
// side of the process boundary:
//
//   - In the node, Start launches one plugin binary, checks its handshake,
//     asks it what it serves and returns a *Plugin, an rpc.Invoker for those
//     services; Supervisor keeps one running, restarting it with backoff and
//     telling its owner through OnUp and OnDown when its services come and go;
//     its State says whether the plugin is up, and why not. A supervisor
//     that watches its binary (SupervisorConfig.Watch) swaps in each new
//     one while calls go on: the new process takes the calls once it is
//     up (OnSwap), the old one finishes those under way and stops; a new
//     binary that does not start leaves the old one serving (OnRefused).
//   - In the plugin, handler authors call sdk.Serve (package plugins/sdk)
//     with plain Go types whose methods become Dubbo methods, or with
//     protobuf services (sdk.ProtoService); a plugin
//     that only calls (consumer side) uses sdk.Run, or sdk.ServeWith with a
//     start hook, which runs once the node has accepted the plugin.
//
// Arguments and results cross the boundary hessian2-encoded, so the Java
// types a Dubbo caller sent (int vs long, List, Map, POJO class names) reach
// the handler and come back unchanged. A handler can call other services
// through the node (sdk.Client); the node answers those calls with the
// Config.Host invoker. Calls both ways travel on two pipes, one each way,
// that the node passes the plugin at launch; gRPC carries the handshake
// and life cycle.
//
// A plugin can also serve protobuf services (sdk.ProtoService), which
// Triple callers reach. Their descriptors come with what the plugin
// serves (ServiceDesc.Proto and Files, for reflection and JSON), and the
// node calls them with CallProto (unary) and OpenStream (server, client
// and bidi streams, with flow control both ways), passing the messages as
// the caller encoded them: the node never decodes them.
//
// A plugin's stdout, stderr and slog output go to the node's logger, tagged
// with the plugin's name. When the plugin process dies, calls in flight
// fail at once with an error wrapping rpc.ErrConnection, protobuf calls and
// streams with Unavailable.
//
// Plugin processes run in their own process group, so a Ctrl-C on the
// node's terminal reaches the node only: the node unregisters the services
// first, then stops the plugins (Close). Close, and a refused start, end the
// whole group, so nothing a plugin started outlives it, even a child that
// holds its stdout. A plugin whose node is gone (killed with SIGKILL)
// notices within a second and exits.
package plugins

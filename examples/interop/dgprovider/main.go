// Command dgprovider is a stock dubbo-go v3.3.0 provider of the example
// service org.example.Greeter:1.0.0 over the dubbo protocol with hessian2,
// or with -protocol tri over Triple: org.example.Greeter in wrapper mode
// (hessian2, as dubbo-go serves a Java-interface service) and the
// protobuf service greet.GreetService (all four of its methods, with
// dubbo-go's gRPC server reflection).
// It is a test peer: it prints "READY host:port" on stdout once it serves
// (and, with a registry, once its registration nodes are in ZooKeeper), logs
// to stderr, and shuts down gracefully on SIGTERM, which removes its nodes.
//
// -register-mode picks what it registers: "interface" (default) the classic
// /dubbo/<interface>/providers node, "instance" dubbo-go's own default, an
// application-level instance node /services/<app>/<host:port> only, "all"
// both.
//
//	dgprovider -registry zookeeper://127.0.0.1:2181 -ip 127.0.0.1 -port 20880
//	dgprovider -registry zookeeper://127.0.0.1:2181 -register-mode instance
//	dgprovider -registry "" -port 20880      # no registry, direct URLs only
//	dgprovider -registry "" -protocol tri -port 50051
package main

import (
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"dubbo.apache.org/dubbo-go/v3"
	"dubbo.apache.org/dubbo-go/v3/graceful_shutdown"
	_ "dubbo.apache.org/dubbo-go/v3/imports"
	"dubbo.apache.org/dubbo-go/v3/protocol"
	"dubbo.apache.org/dubbo-go/v3/server"
	"github.com/dubbogo/go-zookeeper/zk"

	"github.com/dubbo-lab/dubbo/examples/interop/dgrun"
	"github.com/dubbo-lab/dubbo/examples/interop/greet"
	"github.com/dubbo-lab/dubbo/examples/interop/greeter"
)

func main() {
	out := dgrun.TakeStdout()
	var (
		registryAddr   = flag.String("registry", "", `registry URL, zookeeper://host:port; "" = no registry`)
		registerMode   = flag.String("register-mode", dgrun.ModeInterface, "what to register: interface (/dubbo/<iface>/providers), instance (/services/<app>, dubbo-go's default) or all")
		proto          = flag.String("protocol", dgrun.ProtocolDubbo, "dubbo (org.example.Greeter, hessian2) or tri (org.example.Greeter in wrapper mode and greet.GreetService)")
		ip             = flag.String("ip", "127.0.0.1", "IP to bind and to register")
		port           = flag.Int("port", 20880, "the protocol's port")
		app            = flag.String("app", "dgprovider", "application name")
		version        = flag.String("version", greeter.Version, "service version")
		group          = flag.String("group", "", "service group")
		shutdownWait   = flag.Duration("shutdown-wait", 3*time.Second, "on SIGTERM, time between unregistering and closing the port (dubbo-go consumer-update-wait-time)")
		sessionTimeout = flag.Duration("session-timeout", 0, "ZooKeeper session timeout (0 = dubbo-go's 5s)")
		readyTimeout   = flag.Duration("ready-timeout", 60*time.Second, "give up if not serving after this long")
		logLevel       = flag.String("log-level", "warn", "dubbo-go log level: debug, info, warn, error")
	)
	flag.Parse()
	if *proto != dgrun.ProtocolDubbo && *proto != dgrun.ProtocolTriple {
		fmt.Fprintf(os.Stderr, "dgprovider: -protocol %q: want dubbo or tri\n", *proto)
		os.Exit(2)
	}
	if err := run(out, *registryAddr, *registerMode, *proto, *ip, *port, *app, *version, *group, *shutdownWait, *sessionTimeout, *readyTimeout, *logLevel); err != nil {
		fmt.Fprintln(os.Stderr, "dgprovider:", err)
		os.Exit(1)
	}
	// dubbo-go's own signal handler unregisters, waits, closes the
	// protocols and exits the process on SIGTERM/SIGINT.
	select {}
}

func run(out *os.File, registryAddr, registerMode, proto, ip string, port int, app, version, group string,
	shutdownWait, sessionTimeout, readyTimeout time.Duration, logLevel string) error {
	protocolOpt := protocol.WithDubbo()
	if proto == dgrun.ProtocolTriple {
		protocolOpt = protocol.WithTriple()
	}
	opts := []dubbo.InstanceOption{
		dubbo.WithName(app),
		dubbo.WithProtocol(
			protocolOpt,
			// Without an explicit IP dubbo-go binds every interface and
			// registers the host's address.
			protocol.WithIp(ip),
			protocol.WithPort(port),
		),
		// The local MetadataService would listen on the service port with
		// an empty IP and collide with our 127.0.0.1 listener.
		dubbo.WithRemoteMetadata(),
		dubbo.WithLogger(dgrun.LoggerOptions(logLevel)...),
		dubbo.WithShutdown(
			graceful_shutdown.WithConsumerUpdateWaitTime(shutdownWait),
			graceful_shutdown.WithStepTimeout(shutdownWait),
		),
	}
	var zkHosts []string
	if registryAddr != "" {
		regOpts, err := dgrun.RegistryOptions(registryAddr, registerMode, sessionTimeout)
		if err != nil {
			return err
		}
		opts = append(opts, dubbo.WithRegistry(regOpts...))
		zkHosts = strings.Split(strings.TrimPrefix(registryAddr, "zookeeper://"), ",")
	}
	ins, err := dubbo.NewInstance(opts...)
	if err != nil {
		return fmt.Errorf("new instance: %w", err)
	}
	srv, err := ins.NewServer()
	if err != nil {
		return fmt.Errorf("new server: %w", err)
	}
	h := &greeter.Handler{}
	svcOpts := []server.ServiceOption{server.WithInterface(greeter.Interface), server.WithVersion(version)}
	if group != "" {
		svcOpts = append(svcOpts, server.WithGroup(group))
	}
	if proto == dgrun.ProtocolTriple {
		// A Java-interface service over Triple: the wrapper with hessian2.
		svcOpts = append(svcOpts, server.WithSerialization("hessian2"))
	}
	if err := srv.Register(h, greeter.ServiceInfo(*h), svcOpts...); err != nil {
		return fmt.Errorf("register: %w", err)
	}
	services := []string{greeter.Interface}
	if proto == dgrun.ProtocolTriple {
		g := greet.Handler{}
		if err := srv.Register(g, greet.ServiceInfo(g), server.WithInterface(greet.Service)); err != nil {
			return fmt.Errorf("register %s: %w", greet.Service, err)
		}
		services = append(services, greet.Service)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve() }() // blocks forever once serving

	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	deadline := time.Now().Add(readyTimeout)
	if err := waitListening(addr, deadline, served); err != nil {
		return err
	}
	if len(zkHosts) > 0 {
		if err := waitRegistered(zkHosts, registerMode, proto, services, app, addr, deadline, served); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "READY %s\n", addr)
	return nil
}

func waitListening(addr string, deadline time.Time, served <-chan error) error {
	for {
		select {
		case err := <-served:
			return fmt.Errorf("serve: %v", err)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not listening: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitRegistered polls ZooKeeper until the nodes of registerMode for addr
// exist, so that READY means consumers can find us: the interface-level
// provider URL of each service under /dubbo/<interface>/providers, the
// instance node /services/<app>/<addr>, or both.
func waitRegistered(hosts []string, registerMode, proto string, services []string, app, addr string, deadline time.Time, served <-chan error) error {
	conn, _, err := zk.Connect(hosts, 10*time.Second, zk.WithLogInfo(false))
	if err != nil {
		return fmt.Errorf("check registration: %w", err)
	}
	defer conn.Close()
	instances := "/services/" + app
	wantProvider := registerMode != dgrun.ModeInstance
	wantInstance := registerMode == dgrun.ModeInstance || registerMode == dgrun.ModeAll
	for {
		select {
		case err := <-served:
			return fmt.Errorf("serve: %v", err)
		default:
		}
		var missing []string
		for _, svc := range services {
			providers := "/dubbo/" + svc + "/providers"
			if wantProvider && !hasProviderNode(conn, providers, proto, addr) {
				missing = append(missing, "a provider node under "+providers)
			}
		}
		if wantInstance {
			if ok, _, _ := conn.Exists(instances + "/" + addr); !ok {
				missing = append(missing, "the instance node "+instances+"/"+addr)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: no %s", addr, strings.Join(missing, ", no "))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func hasProviderNode(conn *zk.Conn, dir, proto, addr string) bool {
	children, _, _ := conn.Children(dir)
	for _, c := range children {
		u, err := url.QueryUnescape(c)
		if err == nil && strings.HasPrefix(u, proto+"://"+addr+"/") {
			return true
		}
	}
	return false
}

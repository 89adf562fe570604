package sdk

import (
	"context"
	"net"

	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

// ServeConn serves services on conn as Serve serves them on the link the
// node passes a plugin, in this process and without go-plugin's handshake,
// a start hook or Serve's logging and GC settings: the other end of conn
// plays the node. It is what package sdktest builds on to call handlers
// through the node's encoding and dispatch in a test; handler plugins call
// Serve.
//
// It returns what Serve describes to the node (the wire description, JSON)
// and a func that stops serving and closes conn. Invalid services are
// Serve's error, and conn is left open.
func ServeConn(conn net.Conn, services ...Servable) (description []byte, stop func(), err error) {
	sv, err := newServed(services)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := newServer(ctx, sv, nil)
	desc, err := srv.Describe(ctx, nil)
	if err != nil {
		cancel()
		return nil, nil, errorf("describe the services: %v", err)
	}
	link := wire.NewLink(conn)
	srv.caller = &Caller{host: link}
	link.Start(srv)
	return desc.GetValue(), func() {
		cancel()
		link.Close()
	}, nil
}

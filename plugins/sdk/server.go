package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/plugins/internal/wire"
)

// server is the plugin side of the wire: it decodes calls, runs them on the
// Dispatcher and encodes the replies.
type server struct {
	d      *Dispatcher
	broker *plugin.GRPCBroker

	mu     sync.Mutex
	caller *Caller
	conn   *grpc.ClientConn // to the node's Host service; closed by Serve's exit
}

func newServer(d *Dispatcher, b *plugin.GRPCBroker) *server { return &server{d: d, broker: b} }

// Describe connects back to the node's Host service (once) and says what
// this plugin serves.
func (s *server) Describe(ctx context.Context, in *wrapperspb.UInt32Value) (*wrapperspb.BytesValue, error) {
	if id := in.GetValue(); id != 0 {
		s.mu.Lock()
		if s.conn == nil {
			conn, err := s.broker.DialWithOptions(id, wire.DialOptions()...)
			if err != nil {
				s.mu.Unlock()
				return nil, fmt.Errorf("connect to the node's callback service %d: %w", id, err)
			}
			host := wire.NewHostClient(conn)
			s.conn, s.caller = conn, &Caller{host: &host}
		}
		s.mu.Unlock()
	}
	b, err := json.Marshal(s.d.description())
	if err != nil {
		return nil, err
	}
	return wrapperspb.Bytes(b), nil
}

func (s *server) Invoke(ctx context.Context, in *wrapperspb.BytesValue) (*wrapperspb.BytesValue, error) {
	inv, err := wire.DecodeCall(in.GetValue())
	if err != nil {
		return s.reply(nil, &rpc.CallError{Kind: rpc.ErrBadRequest, Detail: err.Error()})
	}
	s.mu.Lock()
	caller := s.caller
	s.mu.Unlock()
	ctx = context.WithValue(ctx, callKey{}, &callInfo{caller: caller, attachments: inv.Attachments})
	return s.reply(s.d.Invoke(ctx, inv))
}

func (s *server) reply(res *rpc.Result, callErr error) (*wrapperspb.BytesValue, error) {
	b, err := wire.EncodeReply(res, callErr)
	if err != nil {
		// The handler returned something hessian cannot write (an
		// unregistered struct, a channel); say so instead of failing the RPC.
		b, err = wire.EncodeReply(nil, &rpc.CallError{Kind: rpc.ErrProvider, Detail: "the handler's result: " + err.Error()})
		if err != nil {
			return nil, err
		}
	}
	return wrapperspb.Bytes(b), nil
}

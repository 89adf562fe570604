package rpc

import "context"

// Message is one protobuf message in its wire encoding: how an invocation
// of a protobuf (IDL) service carries its request, as its one argument, and
// how the Result of one carries the response, as its Value. Whoever holds
// the service's descriptor (package idl) turns it into JSON and back; the
// call path only moves the bytes.
type Message struct {
	// Type is the message's full name (greet.GreetRequest) where the one who
	// made it knows it; the wire does not carry it, so a Message a client
	// received has none.
	Type string
	// Bytes is the encoded message.
	Bytes []byte
}

// MessageArg returns the message an invocation of a protobuf method
// carries: its single argument, when that is a Message.
func MessageArg(inv *Invocation) (Message, bool) {
	if len(inv.Args) != 1 {
		return Message{}, false
	}
	m, ok := inv.Args[0].(Message)
	return m, ok
}

// Stream is one streaming call to one provider (Triple's server, client and
// bidirectional streams). Send and CloseSend may run on one goroutine while
// Recv runs on another. The stream ends, and its resources go, once Recv
// has returned an error (io.EOF after the provider's last message) or the
// context it was opened with is done: cancel that context to abandon it.
type Stream interface {
	// Send sends one request message.
	Send(Message) error
	// CloseSend says no more request messages follow (half-close).
	CloseSend() error
	// Recv returns the next response message; io.EOF once the provider
	// ended the call successfully, else the call's error (of the categories
	// in errors.go, or an *Exception).
	Recv() (Message, error)
}

// Streamer opens streams. The invokers of protocols that stream (Triple)
// implement it next to Invoker; inv names the service and method and
// carries the attachments, and its Args are not used.
type Streamer interface {
	Stream(ctx context.Context, inv *Invocation) (Stream, error)
}

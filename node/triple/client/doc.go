// Package client is the consumer side of Triple (tri://), Dubbo 3's
// gRPC-compatible protocol: a Client is an rpc.Invoker, and an
// rpc.Streamer, for one provider address, as transport.Client is for
// dubbo://. It is built on grpc-go's client (h2c, no TLS), with a codec that
// moves bytes, so no generated code is needed:
//
//	c := client.New("127.0.0.1:50051", client.Config{})
//	defer c.Close()
//	res, err := c.Invoke(ctx, &rpc.Invocation{Service: "greet.GreetService", Method: "Greet",
//		Args: []any{rpc.Message{Bytes: req}}})   // res.Value is an rpc.Message
//
// Two payload modes, chosen by the invocation:
//
//   - protobuf: the one argument is an rpc.Message (an IDL service's request
//     message, encoded); it goes out as it is, with content-type
//     application/grpc+proto, and the result's Value is the response
//     message as an rpc.Message;
//   - wrapper: any other arguments are a Java-interface call (Dubbo's "POJO
//     way"): each is serialized with hessian2 on its own, with its
//     ParamTypes, into a TripleRequestWrapper (package wrapper), sent with
//     content-type application/grpc+hessian2 as dubbo-go v3.3.0's client
//     sends it; the answer's value is decoded from the wrapper.
//
// What travels with a call: the path /<service>/<method>; the version and
// group as tri-service-version and tri-service-group; the context's
// deadline as grpc-timeout (a unary call without one gets Config.Timeout);
// every other attachment as
// metadata under its lower-case name (a []byte value as <name>-bin; one
// that HTTP/2 cannot carry is left out), remote.application also as
// tri-consumer-appname. The provider's header and trailer metadata come
// back as the result's attachments.
//
// Failures map to the rpc categories (status.go): Unavailable is a
// connection failure, DeadlineExceeded a timeout, ResourceExhausted an
// exhausted pool, Unimplemented and NotFound a missing service or method,
// InvalidArgument, PermissionDenied and Unauthenticated a bad request,
// other codes a provider error. A business exception comes back in the
// Result, as over dubbo://, in the forms the Dubbo implementations send
// it: dubbo-go's status 17 with the message; Java's tri-exception-code
// header with the exception serialized in the response wrapper (or with a
// non-OK status and its message).
//
// Available is false while no connection is up; connections reconnect in
// the background (Config's backoff) until Close.
package client

// Package greetpb is the Go code of greet.proto (the example protobuf
// service greet.GreetService, whose source is
// internal/testkit/greetgrpc/greet.proto in the main module), as
// protoc-gen-go generates it, for dubbo-go's Triple provider in this module.
package greetpb

//go:generate protoc -I ../../../../internal/testkit/greetgrpc --go_out=. --go_opt=paths=source_relative --go_opt=Mgreet.proto=github.com/dubbo-lab/dubbo/examples/interop/greet/greetpb ../../../../internal/testkit/greetgrpc/greet.proto

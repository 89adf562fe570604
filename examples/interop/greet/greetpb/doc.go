// Package greetpb is the Go code of greet.proto (the example protobuf
// service greet.GreetService, whose source is examples/greet/greetpb/greet.proto
// in the main module), as protoc-gen-go generates it, for dubbo-go's Triple
// provider in this module (a module of its own cannot link the main module's
// copy without taking the main module in).
package greetpb

//go:generate protoc -I ../../../greet/greetpb --go_out=. --go_opt=paths=source_relative --go_opt=Mgreet.proto=github.com/dubbo-lab/dubbo/examples/interop/greet/greetpb ../../../greet/greetpb/greet.proto

// Package jsoncall makes calls given in JSON: a service, a method and its
// arguments as JSON values, made through a consumer. The command line
// (dubbo call, dubbo bench) and the HTTP gateway (node/gateway) go through
// its steps:
//
//   - Reference picks the reference a call goes through: the config's
//     reference to the interface, or a new one, with the settings given for
//     the call (Settings) laid over it and over the method's own.
//   - Prepare resolves the call. A service whose tri:// providers describe
//     it with gRPC server reflection (a ServiceResolver: the consumer) is a
//     protobuf one: its argument is the request message as protobuf JSON
//     (package idl), and the invocation carries it encoded, as an
//     rpc.Message. Any other is a Java interface: ParamTypes resolves the
//     arguments' Java types (the ones given, else the registry's metadata,
//     a TypeResolver, else inferred from the JSON) and Invocation converts
//     the arguments to them, with the call's timeout and attachments.
//   - Invoke makes a call through an rpc.Invoker (the consumer); a
//     business exception comes back as the error; Prepared.Result renders
//     its value as JSON. A streaming protobuf method is called with
//     Prepared.Stream instead, through an rpc.Streamer (the consumer).
//
// A mistake in the call as given (arguments that do not fit their types,
// a bad type name, JSON that is not the request message) is an error that
// matches rpc.ErrBadRequest: the command line reports it as a usage error,
// the gateway as 400.
package jsoncall

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/dubbo-lab/dubbo/node/generic"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Call is one call as given.
type Call struct {
	Interface, Version, Group, Method string
	// Args are the arguments, a JSON value each.
	Args []json.RawMessage
	// Types are the arguments' Java types; nil: ParamTypes resolves them
	// (an empty list is a method without parameters).
	Types []string
	// Timeout of each attempt, sent as Dubbo's timeout attachment, which
	// wins over every configured timeout; 0: the configured one.
	Timeout time.Duration
	// Attachments go with the call (a request tag as router.KeyTag).
	Attachments map[string]string
	// Generic makes the invocation generic ($invoke) whatever the types;
	// otherwise it is generic only when it has to be (Invocation).
	Generic bool
}

// TypeResolver finds the Java parameter types of a method with argc
// parameters in the registry's metadata. consumer.Consumer implements it.
type TypeResolver interface {
	ParamTypes(ctx context.Context, iface, version, group, method string, argc int) ([]string, error)
}

// ParamTypes returns the Java types of c's arguments: c.Types when given;
// else what r finds in the registry's metadata; else (r nil, or the
// metadata unreadable or ambiguous) types inferred from the JSON
// (generic.InferTypes), which it logs at debug level. Metadata that has
// the service but not the method is believed: a service-not-found error.
func ParamTypes(ctx context.Context, r TypeResolver, c Call, log *slog.Logger) ([]string, error) {
	if c.Types != nil {
		return c.Types, nil
	}
	if r != nil {
		types, err := r.ParamTypes(ctx, c.Interface, c.Version, c.Group, c.Method, len(c.Args))
		if err == nil {
			return types, nil
		}
		if errors.Is(err, rpc.ErrServiceNotFound) {
			return nil, err
		}
		log.Debug("no parameter types in the registry's metadata; inferring them from the JSON",
			"interface", c.Interface, "method", c.Method, "reason", err)
	}
	return generic.InferTypes(c.Args), nil
}

// Invocation converts c's arguments to types (generic.Args) and builds the
// invocation, with c's attachments and then its timeout. It is generic
// ($invoke) when c.Generic is set or a type is a class of the service's
// own (a POJO), which only a generic invocation can carry without the
// class on our side; otherwise it is the plain invocation a consumer with
// the interface makes.
func Invocation(c Call, types []string) (*rpc.Invocation, error) {
	args, err := generic.Args(types, c.Args)
	if err != nil {
		return nil, err
	}
	var inv *rpc.Invocation
	if c.Generic || needsGeneric(types) {
		inv = generic.Invocation(c.Interface, c.Version, c.Group, c.Method, types, args)
	} else {
		inv = &rpc.Invocation{Service: c.Interface, Version: c.Version, Group: c.Group, Method: c.Method, ParamTypes: types, Args: args}
	}
	attach(inv, c)
	return inv, nil
}

// needsGeneric reports whether an argument type is a POJO: not a
// primitive, nor a class of the JDK.
func needsGeneric(types []string) bool {
	for _, t := range types {
		t = strings.TrimSuffix(t, "[]")
		switch {
		case !strings.Contains(t, "."), strings.HasPrefix(t, "java.lang."), strings.HasPrefix(t, "java.util."),
			strings.HasPrefix(t, "java.math."), strings.HasPrefix(t, "java.time."):
		default:
			return true
		}
	}
	return false
}

// Invoke makes the call inv describes through invoker. inv is not
// changed, so one invocation serves any number of calls, concurrent ones
// too. A business exception is returned as the error, with the result
// (which names the provider).
func Invoke(ctx context.Context, invoker rpc.Invoker, inv *rpc.Invocation) (*rpc.Result, error) {
	call := *inv
	res, err := invoker.Invoke(ctx, &call)
	if err != nil {
		return nil, err
	}
	if res == nil {
		res = &rpc.Result{}
	}
	if res.Exception != nil {
		return res, res.Exception
	}
	return res, nil
}

package generic

import (
	hessian "github.com/apache/dubbo-go-hessian2"

	"github.com/dubbo-lab/dubbo/node/protocol"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Invocation builds the generic invocation (B.8) of method with Java
// parameter types and args as FromJSON produced them: $invoke with the
// attachment generic=true, the types as a String[] and the arguments as an
// Object[] (hessian "[string" and "[object", as Java and dubbo-go write
// them). The provider converts the arguments to the declared types, which
// is what makes POJO maps work.
func Invocation(service, version, group, method string, types []string, args []any) *rpc.Invocation {
	objs := make([]hessian.Object, len(args))
	for i, a := range args {
		objs[i] = a
	}
	return &rpc.Invocation{
		Service: service, Version: version, Group: group,
		Method:      protocol.MethodInvoke,
		ParamTypes:  protocol.GenericParamTypes(),
		Args:        []any{method, append([]string{}, types...), objs},
		Attachments: map[string]any{"generic": "true"},
	}
}

package cluster_test

import (
	"context"
	"fmt"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/cluster/configurator"
	"github.com/dubbo-lab/dubbo/node/cluster/directory"
	"github.com/dubbo-lab/dubbo/node/cluster/loadbalance"
	"github.com/dubbo-lab/dubbo/node/cluster/router"
	"github.com/dubbo-lab/dubbo/node/rpc"
	"github.com/dubbo-lab/dubbo/node/url"
)

// echoProvider stands in for a protocol invoker: it answers with its address.
type echoProvider struct{ u *url.URL }

func (p echoProvider) Invoke(context.Context, *rpc.Invocation) (*rpc.Result, error) {
	return &rpc.Result{Value: p.u.Address()}, nil
}
func (p echoProvider) URL() *url.URL   { return p.u }
func (p echoProvider) Available() bool { return true }

// Example wires the pipeline the way a consumer does: a dynamic directory
// fed by registry notifications, a router chain and override rules that
// rule changes replace, and a cluster invoker on top.
func Example() {
	consumer := url.MustParse("consumer://192.168.1.5/org.example.Greeter?application=shop&loadbalance=roundrobin")
	dir, _ := directory.NewDynamic(directory.Options{
		Consumer: consumer,
		Connect:  func(u *url.URL) (cluster.ProviderInvoker, error) { return echoProvider{u}, nil },
	})
	routes := &router.Chain{}
	dir.SetRouter(routes)
	greeter, _ := cluster.Join(dir, cluster.Options{Cluster: "failover", NewBalancer: loadbalance.New})
	defer greeter.Close()

	call := func() {
		res, err := greeter.Invoke(context.Background(), &rpc.Invocation{Service: "org.example.Greeter", Method: "sayHello"})
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(res.Value)
	}

	// A registry notification with the full provider list.
	dir.Update([]*url.URL{
		url.MustParse("dubbo://10.0.0.1:20880/org.example.Greeter?application=greeter"),
		url.MustParse("dubbo://10.0.0.2:20880/org.example.Greeter?application=greeter"),
	})
	call()
	call()

	// A condition rule from the config center keeps sayHello off 10.0.0.1.
	rule, _ := router.ParseConditionRule([]byte("scope: service\nkey: org.example.Greeter\nconditions:\n  - method = sayHello => host != 10.0.0.1\n"))
	condition, _ := router.NewConditionRouter(rule)
	routes.Set("service-condition", router.OrderServiceCondition, condition)
	call()
	call()

	// An override disables 10.0.0.2; the rule's fallback (force: false) lets calls reach 10.0.0.1 again.
	overrides, _ := configurator.Parse([]byte("scope: service\nkey: org.example.Greeter\nconfigs:\n  - side: provider\n    addresses: [10.0.0.2]\n    parameters: {disabled: true}\n"))
	dir.SetConfigurator("service", 2, overrides)
	call()

	// Output:
	// 10.0.0.1:20880
	// 10.0.0.2:20880
	// 10.0.0.2:20880
	// 10.0.0.2:20880
	// 10.0.0.1:20880
}

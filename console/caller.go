package console

import (
	"context"
	"time"

	"github.com/dubbo-lab/dubbo/node/consumer"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// readyWait bounds how long a service's first test call waits for a
// connected provider.
const readyWait = 3 * time.Second

// ownCaller is the console's own consumer. A reference made on first use
// connects to its providers in the background, so a service's first test
// call waits for one, as dubbo call does, instead of failing with "no
// provider".
type ownCaller struct{ *consumer.Consumer }

func (o ownCaller) Invoke(ctx context.Context, inv *rpc.Invocation) (*rpc.Result, error) {
	ref, err := o.Reference(ctx, consumer.ReferenceConfig{Interface: inv.Service, Version: inv.Version, Group: inv.Group})
	if err == nil && len(ref.Providers()) == 0 {
		wctx, cancel := context.WithTimeout(ctx, readyWait)
		tick := time.NewTicker(5 * time.Millisecond)
		for len(ref.Providers()) == 0 && wctx.Err() == nil {
			select {
			case <-wctx.Done():
			case <-tick.C:
			}
		}
		tick.Stop()
		cancel()
	}
	return o.Consumer.Invoke(ctx, inv)
}

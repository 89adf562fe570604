package loadbalance

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dubbo-lab/dubbo/node/cluster"
	"github.com/dubbo-lab/dubbo/node/rpc"
)

// Keys and defaults of consistent hashing, as in Dubbo.
const (
	keyHashNodes       = "hash.nodes"
	keyHashArguments   = "hash.arguments"
	defaultHashNodes   = 160
	defaultHashArgsKey = "0"
)

// ConsistentHash sends calls with the same key arguments to the same
// provider. Each provider gets hash.nodes virtual nodes (default 160) on a
// ring of 32-bit points cut from md5(address + i) four at a time, exactly as
// Dubbo places them, so that removing a provider moves only its own keys.
// The key is the concatenation of the arguments listed in hash.arguments
// (default "0": the first one); for a generic call ($invoke), the
// arguments of the method it invokes, as Java's RpcUtils.getArguments.
// Both keys are read per method ("get.hash.arguments" first), from the
// first provider's URL, which carries the consumer's settings.
type ConsistentHash struct {
	mu    sync.Mutex
	rings map[string]*ring // per method; rebuilt when the providers or settings change
}

type ring struct {
	signature string
	points    []uint32
	owners    map[uint32]cluster.ProviderInvoker
	args      []int
}

func newConsistentHash(env) cluster.LoadBalancer {
	return &ConsistentHash{rings: make(map[string]*ring)}
}

// Select implements cluster.LoadBalancer.
func (b *ConsistentHash) Select(ps []cluster.ProviderInvoker, inv *rpc.Invocation) cluster.ProviderInvoker {
	method := cluster.MethodName(inv)
	u := ps[0].URL()
	nodes := cluster.MethodIntParam(u, method, keyHashNodes, defaultHashNodes)
	argSpec := cluster.MethodParam(u, method, keyHashArguments)
	if argSpec == "" {
		argSpec = defaultHashArgsKey
	}
	sig := signature(ps, nodes, argSpec)
	b.mu.Lock()
	r := b.rings[method]
	if r == nil || r.signature != sig {
		r = buildRing(ps, nodes, argSpec, sig)
		b.rings[method] = r
	}
	b.mu.Unlock()
	return r.lookup(hashKey(r.args, cluster.MethodArgs(inv)))
}

func signature(ps []cluster.ProviderInvoker, nodes int, argSpec string) string {
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = identity(p)
	}
	slices.Sort(ids)
	return strconv.Itoa(nodes) + "|" + argSpec + "|" + strings.Join(ids, ",")
}

func buildRing(ps []cluster.ProviderInvoker, nodes int, argSpec, sig string) *ring {
	if nodes < 4 {
		nodes = 4
	}
	r := &ring{signature: sig, owners: make(map[uint32]cluster.ProviderInvoker, len(ps)*nodes)}
	for _, s := range strings.Split(argSpec, ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(s)); err == nil && n >= 0 {
			r.args = append(r.args, n)
		}
	}
	for _, p := range ps {
		addr := p.URL().Address()
		for i := 0; i < nodes/4; i++ {
			d := md5.Sum([]byte(addr + strconv.Itoa(i)))
			for h := 0; h < 4; h++ {
				point := binary.LittleEndian.Uint32(d[h*4:])
				r.owners[point] = p
			}
		}
	}
	r.points = make([]uint32, 0, len(r.owners))
	for pt := range r.owners {
		r.points = append(r.points, pt)
	}
	slices.Sort(r.points)
	return r
}

// hashKey is the ring position of the selected arguments: the first four
// bytes of their md5, little-endian, as Dubbo's hash(digest, 0).
func hashKey(args []int, values []any) uint32 {
	var b strings.Builder
	for _, i := range args {
		if i < len(values) {
			fmt.Fprint(&b, values[i])
		}
	}
	d := md5.Sum([]byte(b.String()))
	return binary.LittleEndian.Uint32(d[:4])
}

// lookup finds the first virtual node at or after h, wrapping around.
func (r *ring) lookup(h uint32) cluster.ProviderInvoker {
	i, _ := slices.BinarySearch(r.points, h)
	if i == len(r.points) {
		i = 0
	}
	return r.owners[r.points[i]]
}

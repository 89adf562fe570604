package storage

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

// BenchmarkAppendWait measures one acknowledged write as the server does
// it: assign a zxid and Append under a mutex, then WaitDurable. With many
// appenders, records/flush shows how many writes share one write+fsync.
func BenchmarkAppendWait(b *testing.B) {
	rec := make([]byte, 100)
	for _, fsync := range []bool{false, true} {
		for _, appenders := range []int{1, 16} {
			b.Run(fmt.Sprintf("fsync=%v/appenders=%d", fsync, appenders), func(b *testing.B) {
				l := mustOpen(b, b.TempDir(), fsync)
				var (
					mu   sync.Mutex
					next int64
					wg   sync.WaitGroup
				)
				b.SetBytes(int64(len(rec)))
				b.ResetTimer()
				per := b.N / appenders
				for i := range appenders {
					n := per
					if i == 0 {
						n += b.N % appenders
					}
					wg.Go(func() {
						for range n {
							mu.Lock()
							next++
							z := next
							err := l.Append(z, rec)
							mu.Unlock()
							if err == nil {
								err = l.WaitDurable(context.Background(), z)
							}
							if err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				l.mu.Lock()
				flushes := max(l.flushes, 1)
				l.mu.Unlock()
				b.ReportMetric(float64(b.N)/float64(flushes), "records/flush")
				mustClose(b, l)
			})
		}
	}
}

package stream

import (
	"runtime"
	"sync"
)

// Parallel calls fn on every item, one share of items per CPU, and
// returns when all are done: readers that load a whole stream decode its
// messages a batch at a time this way, then apply the batch in order.
func Parallel[T any](items []T, fn func(*T)) {
	workers := runtime.GOMAXPROCS(0)
	share := (len(items) + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < len(items); lo += share {
		part := items[lo:min(lo+share, len(items))]
		wg.Go(func() {
			for i := range part {
				fn(&part[i])
			}
		})
	}
	wg.Wait()
}

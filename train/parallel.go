package train

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// parallelFor calls fn(i) for i in [0, n) on up to GOMAXPROCS goroutines.
// Each call must write only its own outputs; the results are then the same
// whatever the number of cores and the order the calls ran in.
func parallelFor(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := 0; i < n; i++ {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// chunkSize is the fixed number of rows one task handles in per-sample loops.
// Sums over samples are added per chunk and then chunk by chunk in order, so
// they do not depend on the number of cores.
const chunkSize = 512

// chunks returns the number of chunkSize chunks covering n rows.
func chunks(n int) int { return (n + chunkSize - 1) / chunkSize }

// chunkRange returns the rows [lo, hi) of chunk c.
func chunkRange(c, n int) (int, int) { return c * chunkSize, min((c+1)*chunkSize, n) }

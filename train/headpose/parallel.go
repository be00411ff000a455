package headpose

import (
	"runtime"
	"sync"
)

// parallel runs items 0…n−1 on GOMAXPROCS goroutines. worker is called
// once per goroutine and returns the function that handles one item, so a
// goroutine can keep its own buffers (a feature extractor, a pose worker).
// Each item must write only its own results.
func parallel(n int, worker func() func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			do := worker()
			for i := range next {
				do(i)
			}
		}()
	}
	for i := 0; i < n; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
}

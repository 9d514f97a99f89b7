package fold

import (
	"runtime"
	"sync"
)

// A call's CPU work (decoding the batches' stats, merging a window's keys) is split over up
// to maxProcs goroutines, never more than GOMAXPROCS. The split only divides independent
// work: the outcome, errors included, is what one goroutine computes. A write is shorter so
// where cores are free beside it; where they are busy it divides the same work.
const maxProcs = 4

// parallelMin is the fewest entries a window's fold must hold before it is split: below it,
// starting goroutines costs more than it saves.
const parallelMin = 4096

// procs returns how many goroutines a call uses.
func procs() int { return min(runtime.GOMAXPROCS(0), maxProcs) }

// each runs fn(i) for i in [0, n) on up to procs goroutines and returns the error of the
// lowest i that failed, as a loop over i that stops at the first error would (fn must not
// depend on another i's outcome).
func each(procs, n int, fn func(i int) error) error {
	if procs <= 1 || n <= 1 {
		for i := range n {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	errs := make([]error, n)
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range min(procs, n) {
		wg.Go(func() {
			for i := range next {
				errs[i] = fn(i)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

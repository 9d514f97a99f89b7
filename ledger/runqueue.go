package ledger

// runQueue is a ring buffer of runs. Popped slots keep their ack bitmaps' storage, so a
// steady stream of runs allocates nothing once the ring has grown to the working set.
type runQueue struct {
	buf []run // len is a power of two, or zero
	h   int   // index of the first run
	n   int
}

func (q *runQueue) at(i int) *run { return &q.buf[(q.h+i)&(len(q.buf)-1)] }

func (q *runQueue) head() *run {
	if q.n == 0 {
		return nil
	}
	return &q.buf[q.h]
}

func (q *runQueue) tail() *run {
	if q.n == 0 {
		return nil
	}
	return q.at(q.n - 1)
}

// push appends a slot and returns it; the caller overwrites it whole.
func (q *runQueue) push() *run {
	if q.n == len(q.buf) {
		q.grow()
	}
	q.n++
	return q.at(q.n - 1)
}

func (q *runQueue) pop() {
	q.h = (q.h + 1) & (len(q.buf) - 1)
	q.n--
}

func (q *runQueue) grow() {
	size := max(8, 2*len(q.buf))
	buf := make([]run, size)
	for i := 0; i < q.n; i++ {
		buf[i] = *q.at(i)
	}
	q.buf, q.h = buf, 0
}

// find returns the run whose offsets span offset, or nil. Runs are ordered by offset.
func (q *runQueue) find(offset int64) *run {
	lo, hi := 0, q.n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if q.at(mid).last < offset {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == q.n {
		return nil
	}
	if r := q.at(lo); r.first <= offset {
		return r
	}
	return nil
}

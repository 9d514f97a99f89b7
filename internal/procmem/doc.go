// Package procmem reads the process's resident memory and splits it between the Go runtime
// and everything outside it (a cgo client's C heap, the C allocator's arenas, the binary,
// the threads' stacks).
//
// It reads Linux's /proc/self; elsewhere every figure is 0 and ResetPeak reports false, so
// that callers degrade to not knowing rather than failing.
package procmem

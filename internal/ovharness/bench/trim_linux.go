//go:build linux && cgo

package bench

// #include <malloc.h>
import "C"

// trimCHeap returns the C heap's free memory to the operating system (glibc's malloc_trim),
// so that what the raw consumer's client freed does not stay resident in the pipeline's
// phase.
func trimCHeap() { C.malloc_trim(0) }

// Package faults injects failures at fixed points of a sink's write attempts, for the tests
// that prove a sink's crash and retry behaviour. It is internal because fault injection is a
// test instrument, not part of any sink's API.
//
// A test arms an injector on the context it passes to the sink ([With]); the sink calls [At]
// with the context of the call at each [Point] of every attempt. An attempt that meets a
// non-nil error at a point fails there exactly as a failing statement would: inside a
// transaction it is rolled back; at [AfterCommit] the write is durable but the call reports
// the error. The sink classifies the error like any other, so an injector may return a
// transient server error to exercise retries. A context without an injector costs one
// context lookup per point.
package faults

import (
	"context"
	"fmt"
)

// Point is a place in a write attempt where [At] is called.
type Point int

const (
	// BeforeBegin: nothing of the attempt has reached the server yet.
	BeforeBegin Point = iota + 1
	// AfterMarker (effects only): the marker inserts ran inside the open transaction.
	AfterMarker
	// BeforeCommit: every statement of the attempt ran; the transaction is still open.
	BeforeCommit
	// AfterCommit: the transaction committed; the call has not returned yet.
	AfterCommit
)

func (p Point) String() string {
	switch p {
	case BeforeBegin:
		return "before-begin"
	case AfterMarker:
		return "after-marker"
	case BeforeCommit:
		return "before-commit"
	case AfterCommit:
		return "after-commit"
	default:
		return fmt.Sprintf("Point(%d)", int(p))
	}
}

// Attempt describes the attempt a point is reached in.
type Attempt struct {
	Op string // the sink's name of the operation: "write close", "upsert latest", "apply effects"
	N  int    // 1-based attempt number
	// Conn is the server's id of the attempt's connection (a Postgres backend PID, a MySQL
	// connection id), so that a test can kill it; 0 before a connection is held.
	Conn int64
}

// Func is an injector: a non-nil error makes the attempt fail at p.
type Func func(ctx context.Context, p Point, a Attempt) error

type key struct{}

// With returns a copy of ctx that carries f; a nil f disarms.
func With(ctx context.Context, f Func) context.Context {
	return context.WithValue(ctx, key{}, f)
}

// At calls the injector ctx carries, if any, and returns its error.
func At(ctx context.Context, p Point, a Attempt) error {
	f, _ := ctx.Value(key{}).(Func)
	if f == nil {
		return nil
	}
	return f(ctx, p, a)
}

// Armed reports whether ctx carries an injector, so that a sink fetches what only an
// injector needs (a connection id costs a round trip on some servers) only when one is set.
func Armed(ctx context.Context) bool {
	f, _ := ctx.Value(key{}).(Func)
	return f != nil
}

package dlq_test

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/streamledger/streamledger/dlq"
)

// ValidationError names its own class, so dead letters it causes group under "validation".
type ValidationError struct{ Field string }

func (e *ValidationError) Error() string      { return "invalid field " + e.Field }
func (e *ValidationError) ErrorClass() string { return "validation" }

func ExampleNewDeadLetter() {
	rec := dlq.Record{
		Topic: "events", Partition: 3, Offset: 1042,
		Key: []byte("key-42"), Value: []byte(`{"delay":"soon"}`),
		Headers: []dlq.Header{{Key: "trace-id", Value: []byte("abc")}},
	}
	cause := fmt.Errorf("decode: %w", &ValidationError{Field: "delay"})
	failedAt := time.Date(2024, 3, 5, 7, 42, 13, 0, time.UTC)

	d := dlq.NewDeadLetter(rec, cause, "consumer-1", failedAt)
	headers, err := d.Headers()
	if err != nil {
		panic(err)
	}
	fmt.Println("to", dlq.DefaultTopic(rec.Topic), "partition", rec.Partition)
	for _, h := range headers {
		fmt.Printf("%s: %s\n", h.Key, h.Value)
	}
	// Output:
	// to dlq.events partition 3
	// trace-id: abc
	// __streamledger.dlq.version: 1
	// __streamledger.dlq.topic: events
	// __streamledger.dlq.partition: 3
	// __streamledger.dlq.offset: 1042
	// __streamledger.dlq.error.class: validation
	// __streamledger.dlq.error.message: decode: invalid field delay
	// __streamledger.dlq.consumer: consumer-1
	// __streamledger.dlq.failed.at: 2024-03-05T07:42:13Z
}

func ExampleDecode() {
	headers := []dlq.Header{
		{Key: "trace-id", Value: []byte("abc")},
		{Key: dlq.HeaderVersion, Value: []byte("1")},
		{Key: dlq.HeaderTopic, Value: []byte("events")},
		{Key: dlq.HeaderPartition, Value: []byte("3")},
		{Key: dlq.HeaderOffset, Value: []byte("1042")},
		{Key: dlq.HeaderErrorClass, Value: []byte("validation")},
		{Key: dlq.HeaderReplayCount, Value: []byte("1")},
	}
	d, err := dlq.Decode([]byte("key-42"), []byte(`{"delay":"soon"}`), headers)
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Record, d.ErrorClass, d.ReplayCount)
	fmt.Printf("republished with %s\n", d.ReplayHeaders())

	_, err = dlq.Decode(nil, nil, []dlq.Header{
		{Key: dlq.HeaderVersion, Value: []byte("1")},
		{Key: dlq.HeaderTopic, Value: []byte("events")},
		{Key: dlq.HeaderPartition, Value: []byte("three")},
		{Key: dlq.HeaderOffset, Value: []byte("1042")},
	})
	fmt.Println(errors.Is(err, dlq.ErrBadHeader), err)
	// Output:
	// events/3@1042 validation 1
	// republished with [{trace-id abc} {__streamledger.dlq.replay.count 2}]
	// true dlq: header __streamledger.dlq.partition: expected a partition in decimal, 0 to 2147483647, found "three"
}

func ExampleErrorClass() {
	_, err := strconv.Atoi("soon")
	fmt.Println(dlq.ErrorClass(fmt.Errorf("field delay: %w", err)))
	fmt.Println(dlq.ErrorClass(&ValidationError{Field: "delay"}))
	// Output:
	// *strconv.NumError
	// validation
}

func ExamplePolicy() {
	p := dlq.Policy{MaxReplays: 2, Classes: []string{"validation"}, Limit: 10}
	fresh := dlq.DeadLetter{Record: dlq.Record{Topic: "events"}, ErrorClass: "validation"}
	looping := fresh
	looping.ReplayCount = 2
	other := fresh
	other.ErrorClass = "*strconv.NumError"

	fmt.Println(p.Decide(fresh, 0), p.Decide(looping, 0), p.Decide(other, 0), p.Decide(fresh, 10))
	// Output:
	// replay refuse skip stop
}

func ExampleReport() {
	t0 := time.Date(2024, 3, 5, 7, 0, 0, 0, time.UTC)
	r := dlq.Report{DryRun: true}
	p := dlq.Policy{}
	for i, class := range []string{"validation", "schema", "validation", "validation"} {
		d := dlq.DeadLetter{
			Record:       dlq.Record{Topic: "events", Offset: int64(i)},
			ErrorClass:   class,
			ErrorMessage: class + " failed",
			FailedAt:     t0.Add(time.Duration(i) * time.Minute),
			ReplayCount:  i / 3 * 3, // the last one has looped
		}
		r.Add(d, p.Decide(d, r.Replayed))
	}
	r.WriteTo(os.Stdout)
	// Output:
	// 4 dead letters: would replay 3, skipped 0, refused 1, invalid 0
	// CLASS       COUNT  REPLAY  SKIP  REFUSE  FIRST FAILED          LAST FAILED           EXAMPLE
	// validation  3      2       0     1       2024-03-05T07:00:00Z  2024-03-05T07:03:00Z  "validation failed"
	// schema      1      1       0     0       2024-03-05T07:01:00Z  2024-03-05T07:01:00Z  "schema failed"
}

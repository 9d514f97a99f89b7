package dlqkafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/internal/kafkaconf"
	"github.com/streamledger/streamledger/internal/retry"
	"github.com/streamledger/streamledger/sink"
)

// sender produces messages with an idempotent librdkafka producer and reports each one's fate
// exactly once: success only on a positive delivery report, after up to retry.MaxAttempts
// produce attempts. Every done function runs on the sender's delivery goroutine, one at a time. It is
// shared by Producer and Replay.
type sender struct {
	p       *kafka.Producer
	dr      chan kafka.Event
	retry   sink.RetryPolicy // resolved
	onError func(error)

	mu       sync.Mutex
	pending  int  // messages produced whose outcome is not reported yet
	closing  bool // no new messages: close has begun
	aborting bool // no more retries either: close's deadline has passed

	quit     chan struct{}
	loopDone chan struct{}
}

// outcome is the fate of one message.
type outcome struct {
	tp       kafka.TopicPartition // where it was written (Offset set on success)
	attempts int
	err      error // nil only on a positive delivery report
}

type inflight struct {
	msg      kafka.Message // what to produce again on a retry
	attempts int
	done     func(outcome)
	reported bool
}

// forcedProducer are the settings a sender cannot work without; a user value that differs is an
// error rather than silently replaced.
var forcedProducer = kafka.ConfigMap{
	// Retries after a failed delivery report must not reorder or duplicate within a session.
	"enable.idempotence": true,
	// A topic the broker creates on its own gets the broker's partition count, not the source's:
	// see Config.CreateTopics.
	"allow.auto.create.topics": false,
	// The sender learns every message's fate from its delivery report.
	"go.delivery.reports": true,
}

// smallChannels are the client's channel sizes unless the user sets them. The client
// allocates its events and produce channels whole, a million entries each by default.
// Delivery reports go to a channel of the sender's own and the produce channel is unused, so
// the events channel carries only client errors and logs.
var smallChannels = kafka.ConfigMap{"go.events.channel.size": 1024, "go.produce.channel.size": 1}

func producerConfig(user kafka.ConfigMap) (kafka.ConfigMap, error) {
	conf, err := kafkaconf.Apply(user, forcedProducer, smallChannels)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	// Delivery reports need only the partition and offset; copying keys and values back is waste.
	conf["go.delivery.report.fields"] = "none"
	return conf, nil
}

func newSender(conf kafka.ConfigMap, policy sink.RetryPolicy, onError func(error)) (*sender, error) {
	pc, err := producerConfig(conf)
	if err != nil {
		return nil, err
	}
	p, err := kafka.NewProducer(&pc)
	if err != nil {
		return nil, fmt.Errorf("dlqkafka: new producer: %w", err)
	}
	s := &sender{
		p:        p,
		dr:       make(chan kafka.Event, 1024),
		retry:    retry.Resolve(policy),
		onError:  onError,
		quit:     make(chan struct{}),
		loopDone: make(chan struct{}),
	}
	go s.loop()
	return s, nil
}

// send produces msg; done is called exactly once, from the delivery goroutine, unless send
// returns an error, in which case it is never called. A full librdkafka queue is such an
// error, at once ([ErrQueueFull]): the caller sends again later rather than wait here.
func (s *sender) send(ctx context.Context, msg kafka.Message, done func(outcome)) error {
	f := &inflight{msg: msg, done: done}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return ErrClosed
	}
	s.pending++
	s.mu.Unlock()
	if err := s.produce(f); err != nil {
		s.mu.Lock()
		s.pending--
		s.mu.Unlock()
		return err
	}
	return nil
}

func (s *sender) produce(f *inflight) error {
	// f is shared between the delivery loop and retry timers; librdkafka's own synchronization
	// between Produce and the delivery report is invisible to the race detector, so f's state is
	// kept under s.mu.
	s.mu.Lock()
	f.attempts++
	s.mu.Unlock()
	m := f.msg
	m.Opaque = f
	err := s.p.Produce(&m, s.dr)
	var ke kafka.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ke) && ke.Code() == kafka.ErrQueueFull:
		return fmt.Errorf("%w: produce to %s: %w", ErrQueueFull, tpString(m.TopicPartition), err)
	}
	return fmt.Errorf("dlqkafka: produce to %s: %w", tpString(m.TopicPartition), err)
}

func (s *sender) loop() {
	defer close(s.loopDone)
	events := s.p.Events()
	for {
		select {
		case ev := <-s.dr:
			switch ev := ev.(type) {
			case *kafka.Message:
				s.delivered(ev)
			case retryFailed:
				s.report(ev.f, ev.o)
			}
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if e, isErr := ev.(kafka.Error); isErr && s.onError != nil {
				s.onError(e)
			}
		case <-s.quit:
			return
		}
	}
}

func (s *sender) delivered(m *kafka.Message) {
	f, ok := m.Opaque.(*inflight)
	if !ok {
		return
	}
	err := m.TopicPartition.Error
	s.mu.Lock()
	attempts, reported := f.attempts, f.reported
	again := err != nil && attempts < s.retry.MaxAttempts && !s.aborting
	s.mu.Unlock()
	if reported {
		return
	}
	if err == nil {
		s.report(f, outcome{tp: m.TopicPartition, attempts: attempts})
		return
	}
	if !again || s.p.GetFatalError() != nil {
		s.report(f, outcome{tp: m.TopicPartition, attempts: attempts, err: err})
		return
	}
	time.AfterFunc(retry.Backoff(s.retry, attempts), func() {
		s.mu.Lock()
		aborting := s.aborting
		s.mu.Unlock()
		var rerr error
		if aborting {
			rerr = fmt.Errorf("%w before a retry (last error: %v)", ErrClosed, err)
		} else if rerr = s.produce(f); rerr == nil {
			return
		}
		// Handed to the delivery loop, so that every done runs on that one goroutine.
		s.mu.Lock()
		o := outcome{tp: m.TopicPartition, attempts: f.attempts, err: rerr}
		s.mu.Unlock()
		select {
		case s.dr <- retryFailed{f: f, o: o}:
		case <-s.quit:
		}
	})
}

// retryFailed is a retry that could not be produced, sent through the delivery channel.
type retryFailed struct {
	f *inflight
	o outcome
}

func (e retryFailed) String() string { return "retry failed: " + e.o.err.Error() }

func (s *sender) report(f *inflight, o outcome) {
	s.mu.Lock()
	if f.reported {
		s.mu.Unlock()
		return
	}
	f.reported = true
	s.mu.Unlock()
	f.done(o)
	s.mu.Lock()
	s.pending--
	s.mu.Unlock()
}

func (s *sender) inFlight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pending
}

// flush waits until every message sent has been reported, or ctx is done.
func (s *sender) flush(ctx context.Context) error {
	for s.inFlight() > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.wait()
	}
	return nil
}

// close waits for outstanding messages until ctx is done, then purges what is left (reported
// as failures, never as successes) and closes the producer.
func (s *sender) close(ctx context.Context) error {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	ferr := s.flush(ctx)
	s.mu.Lock()
	s.aborting = true
	s.mu.Unlock()
	if ferr != nil {
		_ = s.p.Purge(kafka.PurgeQueue | kafka.PurgeInFlight)
		// Purged messages come back as failed delivery reports; messages waiting for a retry
		// fail when their timer fires, at the latest after the longest wait between attempts.
		// The bound only guards against a report that never comes, which librdkafka does not
		// do after a purge.
		for end := time.Now().Add(retry.Backoff(s.retry, s.retry.MaxAttempts) + purgeGrace); s.inFlight() > 0 && time.Now().Before(end); {
			s.wait()
		}
	}
	close(s.quit)
	<-s.loopDone
	s.p.Close()
	return ferr
}

// wait serves librdkafka's queue for a moment; when it is empty the messages left are waiting for
// a retry timer or for the delivery loop.
func (s *sender) wait() {
	if s.p.Flush(50) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
}

// purgeGrace bounds the wait for the delivery reports of purged messages.
const purgeGrace = 10 * time.Second

func tpString(tp kafka.TopicPartition) string {
	topic := ""
	if tp.Topic != nil {
		topic = *tp.Topic
	}
	return fmt.Sprintf("%s[%d]", topic, tp.Partition)
}

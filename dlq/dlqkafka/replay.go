package dlqkafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/internal/kafkaconf"
	"github.com/streamledger/streamledger/internal/retry"
	"github.com/streamledger/streamledger/ledger"
	"github.com/streamledger/streamledger/sink"
)

// The defaults of the zero fields of [ReplayConfig].
const (
	defaultReplayGroupPrefix = "streamledger-replay."
	defaultCommitInterval    = time.Second
	defaultShutdownTimeout   = 10 * time.Second
	defaultMaxInFlight       = 1000
)

// ReplayConfig configures [Replay]. Kafka and Topic are required. In every field, zero means
// the default the field states; a negative value is accepted only where the field says what it
// means, and Replay refuses it anywhere else with an error wrapping [ErrConfig] that names the
// field.
type ReplayConfig struct {
	// Kafka is the librdkafka configuration shared by the replay's consumer and producer
	// (bootstrap.servers, TLS, SASL...). The replay sets group.id, enable.auto.commit=false,
	// enable.auto.offset.store=false and enable.partition.eof=true on the consumer and the
	// settings of [Config].Kafka on the producer.
	Kafka kafka.ConfigMap
	// Topic is the dead-letter topic to read, for example "dlq.orders".
	Topic string
	// Group is the consumer group whose committed offsets say how far earlier replays got.
	// The group is a cursor: every letter before its committed offset was replayed, skipped,
	// refused or invalid in an earlier run. To revisit skipped letters, use another group.
	// Empty means "streamledger-replay." + Topic.
	Group string
	// TargetTopic receives the replayed messages. Empty means each letter's original topic.
	TargetTopic string
	// TargetPartition is the partition they go to. Nil means each letter's original
	// partition; a negative partition is refused.
	TargetPartition *int32
	// Policy selects the letters to replay and refuses those that have looped: see [dlq.Policy].
	Policy dlq.Policy
	// DryRun reads and decides without producing or committing anything.
	DryRun bool
	// KeepTimestamp republishes with the original message's timestamp; false lets the producer
	// stamp the replay's time.
	KeepTimestamp bool
	// Retry bounds the produce attempts of one message and the waits between them, as
	// [Config.Retry] does. Zero means 5 attempts, waiting 50 ms before the second and doubling
	// up to 2 s (the default); a negative field means what [sink.RetryPolicy] says (one
	// attempt, no wait, no longest wait). A message still unconfirmed after them ends the
	// replay with an error.
	Retry sink.RetryPolicy
	// MetadataTimeout bounds one metadata, offset or commit request. Zero means 10 s (the
	// default); a negative value is refused.
	MetadataTimeout time.Duration
	// CommitInterval is how often confirmed progress is committed while replaying; progress
	// is always committed at the end. Zero means 1 s (the default); a negative value is
	// refused.
	CommitInterval time.Duration
	// MaxInFlight bounds the messages produced but not yet confirmed. Zero means 1000 (the
	// default); a negative value is refused.
	MaxInFlight int
	// ShutdownTimeout bounds the wait for deliveries once ctx is done, and the close of the
	// clients. Zero means 10 s (the default); a negative value is refused.
	ShutdownTimeout time.Duration
	// OnEntry is called for every message of the topic the replay decides on, in each partition's
	// order, from Replay's goroutine. A dry run uses it to list the letters. Nil means none.
	OnEntry func(Entry)
	// OnError receives client errors that do not stop the replay. Nil drops them.
	OnError func(error)
}

// Entry is one message of the dead-letter topic as a replay decided on it.
type Entry struct {
	// Partition and Offset locate the message in the dead-letter topic.
	Partition int32
	Offset    int64
	// Letter is the decoded dead letter; zero when Err is set.
	Letter dlq.DeadLetter
	// Decision is what the replay does with it; zero when Err is set. For [dlq.Replay] the
	// message has been handed to the producer but its delivery is not confirmed yet when OnEntry
	// runs: [dlq.Report] counts it once it is.
	Decision dlq.Decision
	// Err is why the message is not a valid dead letter; such a message is left out and
	// committed past, like a skipped one.
	Err error
}

// Replay reads the dead-letter topic cfg.Topic from where cfg.Group left it up to each
// partition's high watermark as of the start, and republishes the letters that cfg.Policy
// selects: original key, value and headers (without the reserved headers), with
// [dlq.HeaderReplayCount] one higher, to the original (or target) topic and partition.
//
// The group's offsets are committed only past messages that are done: a replayed letter once its
// delivery report is positive, a skipped, refused or invalid one once decided. A failed delivery
// (after Retry.MaxAttempts) ends the replay with an error, and the group stays before that letter, so
// the next run replays it again. The broker may then hold a copy from the failed run: replay is
// at least once, and a consumer that writes idempotently (as streamledger's does) absorbs it.
//
// Replay returns when every partition is read to its high watermark, the Policy's Limit is
// reached, or ctx is done (then with ctx's error, after committing what was confirmed within
// ShutdownTimeout). The report counts the decisions by error class. A dry run reads the same
// letters and decides the same way but produces and commits nothing.
//
// Replays of the same group must not run concurrently: the group is read and committed without
// a group membership, so two replays would both republish the same letters.
func Replay(ctx context.Context, cfg ReplayConfig) (dlq.Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return dlq.Report{}, err
	}
	r := &replayer{cfg: cfg, report: dlq.Report{DryRun: cfg.DryRun}, targets: map[string]int{}}
	return r.run(ctx)
}

func (cfg ReplayConfig) withDefaults() (ReplayConfig, error) {
	switch {
	case len(cfg.Kafka) == 0:
		return cfg, fmt.Errorf("%w: Kafka is empty, expected at least bootstrap.servers", ErrConfig)
	case cfg.Topic == "":
		return cfg, fmt.Errorf("%w: Topic is empty, expected the dead-letter topic to replay", ErrConfig)
	case cfg.TargetTopic != "" && cfg.TargetTopic == cfg.Topic:
		return cfg, fmt.Errorf("%w: TargetTopic is the dead-letter topic %q itself, expected another topic", ErrConfig, cfg.Topic)
	case cfg.TargetPartition != nil && *cfg.TargetPartition < 0:
		return cfg, fmt.Errorf("%w: TargetPartition: expected >= 0, found %d", ErrConfig, *cfg.TargetPartition)
	}
	for _, f := range []struct {
		name  string
		value int64
	}{
		{"MetadataTimeout", int64(cfg.MetadataTimeout)}, {"CommitInterval", int64(cfg.CommitInterval)},
		{"MaxInFlight", int64(cfg.MaxInFlight)}, {"ShutdownTimeout", int64(cfg.ShutdownTimeout)},
	} {
		if f.value < 0 {
			return cfg, fmt.Errorf("%w: %s: expected a positive value, or zero for the default, found %d", ErrConfig, f.name, f.value)
		}
	}
	if err := dlq.ValidateTopic(cfg.Topic); err != nil {
		return cfg, fmt.Errorf("%w: Topic: %w", ErrConfig, err)
	}
	if cfg.TargetTopic != "" {
		if err := dlq.ValidateTopic(cfg.TargetTopic); err != nil {
			return cfg, fmt.Errorf("%w: TargetTopic: %w", ErrConfig, err)
		}
	}
	if err := cfg.Policy.Validate(); err != nil {
		return cfg, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if cfg.Group == "" {
		cfg.Group = defaultReplayGroupPrefix + cfg.Topic
	}
	cfg.Retry = retry.Resolve(cfg.Retry)
	cfg.MetadataTimeout = cmp.Or(cfg.MetadataTimeout, defaultMetadataTimeout)
	cfg.CommitInterval = cmp.Or(cfg.CommitInterval, defaultCommitInterval)
	cfg.MaxInFlight = cmp.Or(cfg.MaxInFlight, defaultMaxInFlight)
	cfg.ShutdownTimeout = cmp.Or(cfg.ShutdownTimeout, defaultShutdownTimeout)
	return cfg, nil
}

var forcedConsumer = kafka.ConfigMap{
	// Offsets move only past confirmed work, committed explicitly.
	"enable.auto.commit":       false,
	"enable.auto.offset.store": false,
	// The end of a partition is how the replay knows it has caught up, even when the last
	// offsets below the high watermark hold no message (transaction markers).
	"enable.partition.eof": true,
}

// replayer is the state of one Replay call; only Replay's goroutine touches it, except results.
type replayer struct {
	cfg      ReplayConfig
	consumer *kafka.Consumer
	sender   *sender
	report   dlq.Report
	parts    map[int32]*cursor
	targets  map[string]int // partition counts of target topics checked so far
	inflight int
	stopping bool // the Policy's Limit was reached

	mu      sync.Mutex
	results []result
	notify  chan struct{}
}

type result struct {
	partition int32
	offset    int64
	letter    dlq.DeadLetter
	err       error
}

// cursor tracks one partition of the dead-letter topic. Its ledger holds every letter
// decided: one republished waits for its delivery report (an ack), any other is done at once.
type cursor struct {
	led       *ledger.Partition
	end       int64 // high watermark when the replay started: the replay reads below it
	next      int64 // one past the last offset decided (or known to hold no message)
	committed int64 // the group's offset as last committed, or where this replay started
	done      bool  // read through end
}

func newCursor(next, end int64) *cursor {
	return &cursor{led: ledger.NewPartition(), end: end, next: next, committed: next, done: next >= end}
}

// committable is one past the longest prefix of done offsets: the ledger's, or the next
// offset to read when nothing waits.
func (c *cursor) committable() int64 {
	if c.led.Pending() == 0 {
		return c.next // everything decided is done, and below next nothing else waits
	}
	if off, ok := c.led.Committable(); ok {
		return off
	}
	return c.committed // the first letter decided still waits
}

// decided records the letter at off: republished (done once its delivery is confirmed) or
// not (done at once).
func (c *cursor) decided(off int64, republished bool) error {
	cond := ledger.Condition{}
	if republished {
		cond = ledger.Ack()
	}
	if err := c.led.Add(off, cond); err != nil {
		return err
	}
	c.next = off + 1
	if c.next >= c.end {
		c.done = true
	}
	return nil
}

func (r *replayer) run(ctx context.Context) (dlq.Report, error) {
	// A fetch long-poll holds the broker connection, delaying the consumer's close and its
	// other requests by up to this much; a replay reads a finite range and prefers short.
	cc, err := kafkaconf.Apply(r.cfg.Kafka, forcedConsumer, kafka.ConfigMap{"fetch.wait.max.ms": 100})
	if err != nil {
		return r.report, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	cc["group.id"] = r.cfg.Group
	if r.consumer, err = kafka.NewConsumer(&cc); err != nil {
		return r.report, fmt.Errorf("dlqkafka: replay %s: new consumer: %w", r.cfg.Topic, err)
	}
	defer r.closeConsumer()
	if !r.cfg.DryRun {
		r.notify = make(chan struct{}, 1)
		if r.sender, err = newSender(r.cfg.Kafka, r.cfg.Retry, r.cfg.OnError); err != nil {
			return r.report, fmt.Errorf("dlqkafka: replay %s: %w", r.cfg.Topic, err)
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), r.cfg.ShutdownTimeout)
			defer cancel()
			_ = r.sender.close(sctx)
		}()
	}
	if err := r.start(); err != nil {
		return r.report, err
	}
	lerr := r.loop(ctx)
	ferr := r.finish(ctx)
	if lerr != nil && ferr != nil && lerr == ctx.Err() && errors.Is(ferr, lerr) {
		return r.report, ferr // says the same and more
	}
	return r.report, errors.Join(lerr, ferr)
}

// start finds each partition's range to read and assigns the partitions that have letters left.
func (r *replayer) start() error {
	topic := r.cfg.Topic
	n, err := topicPartitions(r.consumer, topic, r.cfg.MetadataTimeout)
	if err != nil {
		return fmt.Errorf("dlqkafka: replay %s: %w", topic, err)
	}
	if n == 0 {
		return fmt.Errorf("dlqkafka: replay: %w: %q", ErrTopicMissing, topic)
	}
	tps := make([]kafka.TopicPartition, n)
	for i := range tps {
		tps[i] = kafka.TopicPartition{Topic: &topic, Partition: int32(i)}
	}
	committed, err := r.consumer.Committed(tps, ms(r.cfg.MetadataTimeout))
	var ke kafka.Error
	if errors.As(err, &ke) && ke.Code() == kafka.ErrGroupIDNotFound {
		// Some brokers (kfake among them) answer so for a group that never committed, where
		// Kafka answers with no offsets: the same thing.
		committed, err = tps, nil
		for i := range committed {
			committed[i].Offset = kafka.OffsetInvalid
		}
	}
	if err != nil {
		return fmt.Errorf("dlqkafka: replay %s: committed offsets of group %q: %w", topic, r.cfg.Group, err)
	}
	r.parts = make(map[int32]*cursor, n)
	var assign []kafka.TopicPartition
	for _, tp := range committed {
		low, high, err := r.consumer.QueryWatermarkOffsets(topic, tp.Partition, ms(r.cfg.MetadataTimeout))
		if err != nil {
			return fmt.Errorf("dlqkafka: replay %s: watermarks of partition %d: %w", topic, tp.Partition, err)
		}
		start := low
		if tp.Offset >= 0 {
			start = max(start, int64(tp.Offset))
		}
		// Where the replay starts counts as committed: there is nothing to commit until it
		// moves.
		c := newCursor(start, high)
		r.parts[tp.Partition] = c
		if !c.done {
			assign = append(assign, kafka.TopicPartition{Topic: &topic, Partition: tp.Partition, Offset: kafka.Offset(c.next)})
		}
	}
	if len(assign) > 0 {
		if err := r.consumer.Assign(assign); err != nil {
			return fmt.Errorf("dlqkafka: replay %s: assign: %w", topic, err)
		}
	}
	return nil
}

func (r *replayer) caughtUp() bool {
	for _, c := range r.parts {
		if !c.done {
			return false
		}
	}
	return true
}

// loop reads and decides until every partition is read, the Limit is reached, a delivery fails
// or ctx is done.
func (r *replayer) loop(ctx context.Context) error {
	lastCommit := time.Now()
	for !r.stopping && !r.caughtUp() {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.collect(); err != nil {
			return err
		}
		if time.Since(lastCommit) >= r.cfg.CommitInterval {
			if err := r.commit(); err != nil {
				return err
			}
			lastCommit = time.Now()
		}
		if r.inflight >= r.cfg.MaxInFlight {
			r.waitResults(ctx, 100*time.Millisecond)
			continue
		}
		switch ev := r.consumer.Poll(100).(type) {
		case *kafka.Message:
			if err := r.handle(ctx, ev); err != nil {
				return err
			}
		case kafka.PartitionEOF:
			if c := r.parts[ev.Partition]; c != nil && !c.done && ev.Offset >= 0 {
				c.next = max(c.next, min(int64(ev.Offset), c.end))
				c.done = c.next >= c.end
			}
		case kafka.Error:
			if ev.IsFatal() {
				return fmt.Errorf("dlqkafka: replay %s: %w", r.cfg.Topic, ev)
			}
			if r.cfg.OnError != nil {
				r.cfg.OnError(ev)
			}
		}
	}
	return nil
}

func (r *replayer) handle(ctx context.Context, m *kafka.Message) error {
	if m.TopicPartition.Error != nil {
		return fmt.Errorf("dlqkafka: replay %s: %w", r.cfg.Topic, m.TopicPartition.Error)
	}
	p, off := m.TopicPartition.Partition, int64(m.TopicPartition.Offset)
	c := r.parts[p]
	if c == nil || c.done || off < c.next {
		return nil
	}
	if off >= c.end {
		c.done = true // a letter that arrived after the start belongs to the next replay
		return nil
	}
	letter, derr := dlq.Decode(m.Key, m.Value, kafkaToDLQHeaders(m.Headers))
	if derr != nil {
		r.report.AddInvalid(fmt.Errorf("%s[%d]@%d: %w", r.cfg.Topic, p, off, derr))
		r.entry(Entry{Partition: p, Offset: off, Err: derr})
		return c.decided(off, false)
	}
	dec := r.cfg.Policy.Decide(letter, r.report.Replayed+r.inflight)
	if dec == dlq.Stop {
		r.stopping = true
		return nil
	}
	if dec != dlq.Replay || r.cfg.DryRun {
		r.entry(Entry{Partition: p, Offset: off, Letter: letter, Decision: dec})
		r.report.Add(letter, dec)
		return c.decided(off, false)
	}
	if err := r.republish(ctx, c, p, off, letter); err != nil {
		return err
	}
	r.entry(Entry{Partition: p, Offset: off, Letter: letter, Decision: dec})
	return nil
}

func (r *replayer) entry(e Entry) {
	if r.cfg.OnEntry != nil {
		r.cfg.OnEntry(e)
	}
}

func (r *replayer) republish(ctx context.Context, c *cursor, p int32, off int64, letter dlq.DeadLetter) error {
	topic, partition := letter.Topic, letter.Partition
	if r.cfg.TargetTopic != "" {
		topic = r.cfg.TargetTopic
	}
	if r.cfg.TargetPartition != nil {
		partition = *r.cfg.TargetPartition
	}
	if err := r.checkTarget(topic, partition); err != nil {
		return err
	}
	msg := kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: partition},
		Key:            letter.Key,
		Value:          letter.Value,
		Headers:        toKafkaHeaders(letter.ReplayHeaders()),
	}
	if r.cfg.KeepTimestamp {
		msg.Timestamp = letter.Timestamp
	}
	err := r.sender.send(ctx, msg, func(o outcome) {
		res := result{partition: p, offset: off, letter: letter}
		if o.err != nil {
			res.err = &DeliveryError{Topic: topic, Partition: partition, Source: letter.Record, Attempts: o.attempts, Err: o.err}
		}
		r.mu.Lock()
		r.results = append(r.results, res)
		r.mu.Unlock()
		select {
		case r.notify <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return fmt.Errorf("dlqkafka: replay %s[%d]@%d: %w", r.cfg.Topic, p, off, err)
	}
	r.inflight++
	return c.decided(off, true)
}

// checkTarget makes sure the target partition exists before producing: librdkafka would
// otherwise hold the message until its topic metadata times out.
func (r *replayer) checkTarget(topic string, partition int32) error {
	n, ok := r.targets[topic]
	if !ok {
		var err error
		// The producer's connection, not the consumer's: a metadata request behind the
		// consumer's fetch long-poll waits for it.
		if n, err = topicPartitions(r.sender.p, topic, r.cfg.MetadataTimeout); err != nil {
			return fmt.Errorf("dlqkafka: replay to %q: %w", topic, err)
		}
		if n > 0 {
			r.targets[topic] = n
		}
	}
	if int(partition) >= n {
		return fmt.Errorf("dlqkafka: replay to %q: %w: expected partition %d, the topic has %d partitions",
			topic, ErrTargetMissing, partition, n)
	}
	return nil
}

// collect applies the delivery results that arrived; a failed one ends the replay.
func (r *replayer) collect() error {
	if r.sender == nil {
		return nil
	}
	r.mu.Lock()
	rs := r.results
	r.results = nil
	r.mu.Unlock()
	var first error
	for _, res := range rs {
		r.inflight--
		if res.err != nil {
			if first == nil {
				first = res.err
			}
			continue
		}
		r.report.Add(res.letter, dlq.Replay)
		if err := r.parts[res.partition].led.Ack(res.offset); err != nil && first == nil {
			first = fmt.Errorf("dlqkafka: replay %s[%d]@%d: %w", r.cfg.Topic, res.partition, res.offset, err)
		}
	}
	return first
}

func (r *replayer) waitResults(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-r.notify:
	case <-ctx.Done():
	case <-t.C:
	}
}

// commit commits each partition's done prefix that moved since the last commit.
func (r *replayer) commit() error {
	if r.cfg.DryRun {
		return nil
	}
	var tps []kafka.TopicPartition
	ps := make([]int32, 0, len(r.parts))
	for p := range r.parts {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	for _, p := range ps {
		c := r.parts[p]
		if off := c.committable(); off > c.committed {
			tps = append(tps, kafka.TopicPartition{Topic: &r.cfg.Topic, Partition: p, Offset: kafka.Offset(off)})
		}
	}
	if len(tps) == 0 {
		return nil
	}
	res, err := r.consumer.CommitOffsets(tps)
	if err != nil {
		return fmt.Errorf("dlqkafka: replay %s: commit group %q: %w", r.cfg.Topic, r.cfg.Group, err)
	}
	for _, tp := range res {
		if tp.Error != nil {
			return fmt.Errorf("dlqkafka: replay %s: commit group %q partition %d: %w", r.cfg.Topic, r.cfg.Group, tp.Partition, tp.Error)
		}
		r.parts[tp.Partition].committed = int64(tp.Offset)
	}
	return nil
}

// finish waits for the deliveries in flight (within ShutdownTimeout once ctx is done) and
// commits what they confirmed.
func (r *replayer) finish(ctx context.Context) error {
	var first error
	if r.sender != nil {
		deadline := time.Time{}
		for r.inflight > 0 {
			if ctx.Err() != nil && deadline.IsZero() {
				deadline = time.Now().Add(r.cfg.ShutdownTimeout)
			}
			if !deadline.IsZero() && time.Now().After(deadline) {
				break
			}
			r.waitResults(context.Background(), 50*time.Millisecond)
			if err := r.collect(); err != nil && first == nil {
				first = err
			}
		}
	}
	if err := r.commit(); err != nil && first == nil {
		first = err
	}
	if first == nil && r.inflight > 0 {
		first = fmt.Errorf("dlqkafka: replay %s: %d deliveries unconfirmed %s after the context ended; their letters stay uncommitted: %w",
			r.cfg.Topic, r.inflight, r.cfg.ShutdownTimeout, ctx.Err())
	}
	return first
}

// closeConsumer closes the consumer under ShutdownTimeout: librdkafka's close can block on an
// unreachable broker (confluent-kafka-go issue 189), and a replay has nothing left to lose then.
func (r *replayer) closeConsumer() {
	done := make(chan struct{})
	go func() {
		_ = r.consumer.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(r.cfg.ShutdownTimeout):
		if r.cfg.OnError != nil {
			r.cfg.OnError(fmt.Errorf("dlqkafka: replay %s: consumer close still blocked after %s", r.cfg.Topic, r.cfg.ShutdownTimeout))
		}
	}
}

type metadataGetter interface {
	GetMetadata(topic *string, allTopics bool, timeoutMs int) (*kafka.Metadata, error)
}

// topicPartitions returns the partition count of topic, 0 if it does not exist.
func topicPartitions(h metadataGetter, topic string, timeout time.Duration) (int, error) {
	md, err := h.GetMetadata(&topic, false, ms(timeout))
	if err != nil {
		return 0, err
	}
	tm, ok := md.Topics[topic]
	if !ok {
		return 0, nil
	}
	switch tm.Error.Code() {
	case kafka.ErrNoError:
		return len(tm.Partitions), nil
	case kafka.ErrUnknownTopicOrPart, kafka.ErrUnknownTopic:
		return 0, nil
	default:
		return 0, tm.Error
	}
}

func ms(d time.Duration) int { return int(d / time.Millisecond) }

func kafkaToDLQHeaders(hs []kafka.Header) []dlq.Header {
	if len(hs) == 0 {
		return nil
	}
	out := make([]dlq.Header, len(hs))
	for i, h := range hs {
		out[i] = dlq.Header{Key: h.Key, Value: h.Value}
	}
	return out
}

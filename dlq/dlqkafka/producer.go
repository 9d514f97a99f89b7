package dlqkafka

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/internal/kafkarecord"
	"github.com/streamledger/streamledger/internal/retry"
	"github.com/streamledger/streamledger/internal/truncate"
	"github.com/streamledger/streamledger/sink"
)

// The defaults of the other zero fields of [Config] and [ReplayConfig].
const (
	defaultMetadataTimeout = 10 * time.Second
	defaultMaxErrorMessage = 4096
)

// Config configures a [Producer]. Kafka and ConsumerID are required. In every field, zero
// means the default the field states; a negative value is accepted only where the field says
// what it means, and NewProducer refuses it anywhere else with an error wrapping [ErrConfig]
// that names the field.
type Config struct {
	// Kafka is the librdkafka configuration (bootstrap.servers, TLS, SASL, client.id...). The
	// producer sets enable.idempotence=true, allow.auto.create.topics=false and
	// go.delivery.reports=true; a different value for one of these is an error.
	Kafka kafka.ConfigMap
	// ConsumerID identifies this consumer instance in every dead letter it writes.
	ConsumerID string
	// Topic names the dead-letter topic of a source topic. Nil means [dlq.DefaultTopic]
	// ("dlq." + source).
	Topic func(source string) string
	// CreateTopics lets the producer create a missing dead-letter topic through the admin client,
	// with the source topic's partition count. When false a missing topic is an error
	// ([ErrTopicMissing]) naming the topic to create. Either way the broker is never asked to
	// auto-create a topic: it would use its default partition count.
	CreateTopics bool
	// ReplicationFactor of created topics. Zero means the broker's default.replication.factor
	// (the default); a negative value is refused.
	ReplicationFactor int
	// TopicConfig is the configuration of created topics (retention.ms...). Nil means none.
	TopicConfig map[string]string
	// Retry bounds the produce attempts of one dead letter, the first included, and the waits
	// between them. Zero means 5 attempts, waiting 50 ms before the second and doubling up to
	// 2 s (the default); a negative field means what [sink.RetryPolicy] says (one attempt, no
	// wait, no longest wait). librdkafka retries within an attempt until message.timeout.ms;
	// an attempt ends with a failed delivery report.
	Retry sink.RetryPolicy
	// MetadataTimeout bounds one lookup or creation of a topic, within Send's context: a
	// lookup is always bounded. Zero means 10 s (the default); a negative value is refused.
	MetadataTimeout time.Duration
	// MaxErrorMessage bounds the error message header in bytes (shortened without splitting a UTF-8 sequence, ending in "...").
	// Zero means 4096 bytes (the default); negative means no bound.
	MaxErrorMessage int
	// Clock gives the time of failure. Nil means time.Now.
	Clock func() time.Time
	// OnError receives errors of the client that concern no single letter (a broker
	// unreachable, an idempotent producer's fatal error). It runs on the producer's delivery
	// goroutine and must not block. Nil drops them.
	OnError func(error)
	// Hooks observe the producer (see [Hook]): each value implements HookDelivery, or
	// NewProducer refuses it.
	Hooks []Hook
}

// Producer writes dead letters. It is safe for concurrent use.
type Producer struct {
	cfg   Config
	s     *sender
	admin *kafka.AdminClient
	hooks []HookDelivery

	mu     sync.Mutex
	closed bool
	topics map[string]resolved // by source topic
	failed map[string]failure  // by source topic: a lookup that failed, kept for lookupBackoff
}

type resolved struct {
	name       string
	partitions int
}

// NewProducer checks cfg and starts an idempotent producer.
func NewProducer(cfg Config) (*Producer, error) {
	if cfg.ConsumerID == "" {
		return nil, fmt.Errorf("%w: ConsumerID is empty, expected an identifier of this consumer", ErrConfig)
	}
	if len(cfg.Kafka) == 0 {
		return nil, fmt.Errorf("%w: Kafka is empty, expected at least bootstrap.servers", ErrConfig)
	}
	if cfg.ReplicationFactor < 0 {
		return nil, fmt.Errorf("%w: ReplicationFactor: expected >= 0, found %d", ErrConfig, cfg.ReplicationFactor)
	}
	if cfg.MetadataTimeout < 0 {
		return nil, fmt.Errorf("%w: MetadataTimeout: expected a positive duration, or zero for 10 s, found %s", ErrConfig, cfg.MetadataTimeout)
	}
	hs, err := newHooks(cfg.Hooks)
	if err != nil {
		return nil, err
	}
	if cfg.Topic == nil {
		cfg.Topic = dlq.DefaultTopic
	}
	cfg.Retry = retry.Resolve(cfg.Retry)
	if cfg.MetadataTimeout == 0 {
		cfg.MetadataTimeout = defaultMetadataTimeout
	}
	if cfg.MaxErrorMessage == 0 {
		cfg.MaxErrorMessage = defaultMaxErrorMessage
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	s, err := newSender(cfg.Kafka, cfg.Retry, cfg.OnError)
	if err != nil {
		return nil, err
	}
	p := &Producer{cfg: cfg, s: s, hooks: hs, topics: map[string]resolved{}, failed: map[string]failure{}}
	if cfg.CreateTopics {
		if p.admin, err = kafka.NewAdminClientFromProducer(s.p); err != nil {
			_ = s.close(context.Background())
			return nil, fmt.Errorf("dlqkafka: new admin client: %w", err)
		}
	}
	return p, nil
}

// Send dead-letters rec, which failed with cause: it builds the [dlq.DeadLetter] (time of
// failure from Config.Clock), makes sure the dead-letter topic exists with enough partitions,
// and produces the letter to the same partition number as rec.
//
// Exactly one of these happens: Send returns an error and done is never called, or Send returns
// nil and done is called exactly once with the letter's outcome. done gets a nil error only on
// a positive delivery report: only then is the source message durable and its offset safe to
// commit; a failed delivery is retried up to Config.Retry.MaxAttempts
// times and then reported with its error, never as a success. Every done function of a Producer
// runs on the producer's delivery goroutine, one at a time; it must not block or call Flush or
// Close: hand the result to your own goroutine (for example, the consumer loop that acks the
// ledger entry).
//
// ctx bounds the topic lookup and the wait for room in the producer's queue, not the delivery.
//
// What the producer did for each letter Send accepted is reported to the Hooks.
func (p *Producer) Send(ctx context.Context, rec dlq.Record, cause error, done func(error)) error {
	start := time.Now()
	if done == nil {
		return fmt.Errorf("%w: Send: done is nil, expected a function to receive the delivery", ErrConfig)
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	letter := p.letter(rec, cause)
	headers, err := letter.Headers()
	if err != nil {
		return fmt.Errorf("dlqkafka: dead letter for %s: %w", rec, err)
	}
	topic, err := p.resolve(ctx, rec.Topic, rec.Partition)
	if err != nil {
		return err
	}
	msg := kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: rec.Partition},
		Key:            letter.Key,
		Value:          letter.Value,
		Headers:        toKafkaHeaders(headers),
		Timestamp:      letter.FailedAt,
	}
	return p.s.send(ctx, msg, func(o outcome) {
		var err error
		info := DeliveryInfo{Source: rec.Topic, Topic: topic, Partition: rec.Partition, Offset: -1, Attempts: o.attempts}
		if o.err != nil {
			err = &DeliveryError{Topic: topic, Partition: rec.Partition, Source: rec, Attempts: o.attempts, Err: o.err}
		} else {
			info.Offset = int64(o.tp.Offset)
		}
		if len(p.hooks) > 0 {
			info.Latency = time.Since(start)
			for _, h := range p.hooks {
				h.OnDelivery(info)
			}
		}
		done(err)
	})
}

// letter builds the dead letter of rec, failed with cause now, its error message bounded by
// MaxErrorMessage.
func (p *Producer) letter(rec dlq.Record, cause error) dlq.DeadLetter {
	letter := dlq.NewDeadLetter(rec, cause, p.cfg.ConsumerID, p.cfg.Clock())
	if p.cfg.MaxErrorMessage > 0 {
		letter.ErrorMessage = truncate.Message(letter.ErrorMessage, p.cfg.MaxErrorMessage)
	}
	return letter
}

// Flush waits until every letter sent so far has been reported to its done function, or until
// ctx is done.
func (p *Producer) Flush(ctx context.Context) error { return p.s.flush(ctx) }

// Close stops taking letters, waits until every letter sent has been reported or ctx is done,
// then closes the client. Letters still unconfirmed when ctx is done are purged and reported
// with an error (never as delivered: the broker may or may not have them). Close returns ctx's
// error in that case.
func (p *Producer) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return ErrClosed
	}
	p.closed = true
	p.mu.Unlock()
	if p.admin != nil {
		p.admin.Close()
	}
	return p.s.close(ctx)
}

// TopicFor returns the name of the dead-letter topic of source.
func (p *Producer) TopicFor(source string) string { return p.cfg.Topic(source) }

// resolve returns the dead-letter topic of source once it is known to exist with a partition
// for partition, creating it when allowed. Only successes are cached, so a topic created by an
// operator after an error is picked up by the next Send.
func (p *Producer) resolve(ctx context.Context, source string, partition int32) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock() // lookups are rare (once per source topic); serializing them is simpler
	if r, ok := p.topics[source]; ok && int(partition) < r.partitions {
		return r.name, nil
	}
	if f, ok := p.failed[source]; ok && p.cfg.Clock().Before(f.until) {
		return "", f.err // a dead-letter cluster that did not answer is not asked again at once
	}
	name, parts, err := p.lookup(ctx, source, partition)
	if err != nil {
		var te *TopicError
		if !errors.As(err, &te) && !errors.Is(err, ErrConfig) {
			p.failed[source] = failure{err: err, until: p.cfg.Clock().Add(lookupBackoff)}
		}
		return "", err
	}
	delete(p.failed, source)
	p.topics[source] = resolved{name: name, partitions: parts}
	return name, nil
}

// lookupBackoff is how long a failed lookup of a dead-letter topic is remembered: every Send
// for its source fails at once meanwhile, instead of waiting on the cluster again.
const lookupBackoff = 2 * time.Second

// failure is a lookup that failed.
type failure struct {
	err   error
	until time.Time
}

// lookup finds (or creates) the dead-letter topic of source and checks its partitions.
func (p *Producer) lookup(ctx context.Context, source string, partition int32) (string, int, error) {
	name := p.cfg.Topic(source)
	if err := dlq.ValidateTopic(name); err != nil {
		return "", 0, fmt.Errorf("%w: dead-letter topic of %q: %w", ErrConfig, source, err)
	}
	if name == source {
		return "", 0, fmt.Errorf("%w: Topic maps %q to itself, expected a separate dead-letter topic", ErrConfig, source)
	}
	srcParts, err := p.partitions(ctx, source)
	if err != nil {
		return "", 0, fmt.Errorf("dlqkafka: source topic %q: %w", source, err)
	}
	dlqParts, err := p.partitions(ctx, name)
	if err != nil {
		return "", 0, fmt.Errorf("dlqkafka: dead-letter topic %q: %w", name, err)
	}
	if dlqParts == 0 {
		if !p.cfg.CreateTopics {
			return "", 0, &TopicError{Topic: name, Source: source, SourcePartitions: srcParts, Err: ErrTopicMissing}
		}
		if dlqParts, err = p.create(ctx, name, srcParts); err != nil {
			return "", 0, &TopicError{Topic: name, Source: source, SourcePartitions: srcParts, Err: err}
		}
	}
	if dlqParts < srcParts || int(partition) >= dlqParts {
		return "", 0, &TopicError{Topic: name, Source: source, Partitions: dlqParts, SourcePartitions: srcParts, Partition: partition, Err: ErrTooFewPartitions}
	}
	return name, dlqParts, nil
}

// partitions returns the partition count of topic, 0 if it does not exist.
func (p *Producer) partitions(ctx context.Context, topic string) (int, error) {
	return topicPartitions(p.s.p, topic, time.Duration(timeoutMs(ctx, p.cfg.MetadataTimeout))*time.Millisecond)
}

// create makes topic with the given partition count and waits until the producer's metadata
// shows it, so that the first produce does not race the topic's propagation.
func (p *Producer) create(ctx context.Context, topic string, partitions int) (int, error) {
	if partitions <= 0 {
		return 0, fmt.Errorf("%w: the source topic does not exist, so its partition count is unknown", ErrTopicMissing)
	}
	rf := p.cfg.ReplicationFactor
	if rf == 0 {
		rf = -1 // the broker's default.replication.factor
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.MetadataTimeout)
	defer cancel()
	res, err := p.admin.CreateTopics(cctx, []kafka.TopicSpecification{{
		Topic: topic, NumPartitions: partitions, ReplicationFactor: rf, Config: p.cfg.TopicConfig,
	}}, kafka.SetAdminOperationTimeout(p.cfg.MetadataTimeout))
	if err != nil {
		return 0, fmt.Errorf("create: %w", err)
	}
	for _, r := range res {
		if c := r.Error.Code(); c != kafka.ErrNoError && c != kafka.ErrTopicAlreadyExists {
			return 0, fmt.Errorf("create: %w", r.Error)
		}
	}
	for {
		n, err := p.partitions(cctx, topic)
		if err == nil && n > 0 {
			return n, nil
		}
		select {
		case <-cctx.Done():
			return 0, fmt.Errorf("created, but not visible in metadata after %s: %w", p.cfg.MetadataTimeout, cctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// timeoutMs is the smaller of max and what is left of ctx, for librdkafka's millisecond timeouts.
func timeoutMs(ctx context.Context, max time.Duration) int {
	d := max
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); left < d {
			d = left
		}
	}
	if d < time.Millisecond {
		d = time.Millisecond
	}
	return int(d / time.Millisecond)
}

func toKafkaHeaders(hs []dlq.Header) []kafka.Header {
	if len(hs) == 0 {
		return nil
	}
	out := make([]kafka.Header, len(hs))
	for i, h := range hs {
		out[i] = kafka.Header{Key: h.Key, Value: h.Value}
	}
	return out
}

// RecordFromMessage converts a consumed message to a [dlq.Record]. Keys, values and header
// values are shared, not copied.
func RecordFromMessage(m *kafka.Message) dlq.Record { return kafkarecord.Of(m) }

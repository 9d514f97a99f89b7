// Package prom exports the metrics of a streamledger consumer, its sink and its
// dead-letter producer to Prometheus. One [Metrics] implements the hooks of all three, so
// it attaches with one line to each:
//
//	m, err := prom.New(registry)
//	consumer.Config[K]{..., Hooks: []consumer.Hook{m}}
//	postgres.Config{..., Hooks: []sink.Hook{m}}
//	dlqkafka.Config{..., Hooks: []dlqkafka.Hook{m}}
//
// The packages it observes import no metrics library: they find the hooks by type
// assertion (see consumer.Hook, sink.Hook and dlqkafka.Hook).
//
// # Concurrency
//
// Every method is safe for concurrent use. The consumer calls OnMessage from its worker
// goroutines, several at once (each partition's messages in offset order), and its other
// hooks from the polling goroutine; the sink reports from the goroutines that write
// through it; the producer reports deliveries from its delivery goroutine. OnMessage, the
// per-message path, takes no lock and allocates nothing once a topic has been seen.
//
// # Names and sources
//
// Every metric name has the prefix processor_ (processor_uncommitted_messages,
// processor_consumer_lag...), whatever the package that reports it: the names are what
// dashboards and alerts select on, so they keep that prefix though the Go packages
// say consumer. The packages it observes know no metric name. Each metric has one
// source, the layer that owns what it counts: the consumer reports what works with any sink
// or dead-letterer (decisions, commits, each sink write with its result, rows and duration,
// each dead letter's outcome, the gauges); the sink and the dead-letter producer report only
// what they alone know (retries, rows stored, merged or ignored, a letter's produce time).
//
// # Consumer metrics
//
// Counters, by topic where it applies:
//
//	processor_consumed_total{topic}              messages decided: admitted + late + dead-lettered
//	processor_admitted_total{topic}
//	processor_late_events_total{topic}           events whose window had closed in their partition
//	processor_decode_errors_total{topic}         messages that failed to decode or validate (dead-lettered)
//	processor_dead_letters_total{topic,result}   dead-letter outcomes: delivered or failed (sent again)
//	processor_lost_offsets_total{topic,partition} offsets deleted (retention, DeleteRecords) before they were read
//	processor_commits_total                      accepted offset commits
//	processor_commit_failures_total
//	processor_sink_writes_total{kind}            state flushes and close batches that committed
//	processor_sink_write_failures_total{kind}
//	processor_sink_rows_total{kind}              state rows and partials written
//
// Gauges:
//
//	processor_uncommitted_messages               the ledgers' depth over all partitions
//	processor_open_windows                       open (window, key) aggregates over all partitions
//	processor_consumer_lag{topic,partition}      high watermark minus position
//	processor_partition_watermark_seconds{topic,partition}
//	processor_partition_closed_through_seconds{topic,partition}
//	processor_watermark_seconds                  the minimum over active partitions (readiness)
//	processor_assigned_partitions
//	processor_unassigned_seconds                 how long the consumer has held no partition, 0 while it holds some
//	processor_since_assignment_seconds           time since the assignment last changed
//	processor_buffered_bytes{kind}               what BufferLimit bounds, estimated: windows, backlog
//
// Histograms: processor_sink_write_duration_seconds{kind} (the consumer's sink writes, as
// the consumer times them: a state flush, or a close batch with the duration of the call that
// wrote it) and processor_tick_duration_seconds. A partition's gauges are deleted when it is
// revoked; its processor_lost_offsets_total stays, as a loss is counted once, by the consumer
// that found it.
//
// # Sink metrics
//
// From the sink itself, per call of WriteClose (op write_close) or UpsertLatest (op
// upsert_latest):
//
//	processor_sink_retries_total{op}             transactions retried after transient failures
//	processor_sink_stored_rows_total{kind}       rows committed: merged, compact, folded, progress, state
//	processor_sink_ignored_partials_total        replays of merged partitions and final windows
//
// # Dead-letter metrics
//
// From the dead-letter producer, by source topic:
//
//	processor_dlq_retries_total{topic}           produce attempts after a failed one
//	processor_dlq_delivery_seconds{topic}        histogram: from Send to the outcome, attempts included
package prom

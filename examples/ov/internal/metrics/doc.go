// Package metrics exports the OV processor's Prometheus metrics, under the seed's names, from
// the consumer runtime's hooks, and keeps a snapshot of the same figures for the demo's
// progress line.
//
// # Metrics
//
// Counters, by topic where it applies:
//
//	processor_consumed_total{topic}           messages decided (consumed = admitted + late + dead-lettered)
//	processor_admitted_total{topic}
//	processor_late_events_total{topic}        events whose window had closed in their partition
//	processor_decode_errors_total{topic}      messages that failed to decode or validate (dead-lettered)
//	processor_dead_letters_total{topic,result} dead-letter delivery reports: delivered or failed
//	processor_commits_total                   accepted offset commits
//	processor_commit_failures_total
//	processor_sink_writes_total{kind}         state flushes and close batches that committed
//	processor_sink_write_failures_total{kind}
//	processor_sink_rows_total{kind}           state rows and partials written
//
// Gauges:
//
//	processor_uncommitted_messages            the ledger's depth over all partitions
//	processor_open_windows                    open (window, key) aggregates over all partitions
//	processor_consumer_lag{topic,partition}   high watermark minus position
//	processor_partition_watermark_seconds{topic,partition}
//	processor_partition_closed_through_seconds{topic,partition}
//	processor_watermark_seconds               the minimum over active partitions (readiness)
//	processor_assigned_partitions
//
// Histograms: processor_sink_write_duration_seconds{kind}, processor_tick_duration_seconds.
// A partition's series are deleted when it is revoked.
package metrics

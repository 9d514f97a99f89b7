// Package oracle computes, in one plain pass over a feed's records, what the OV processor
// must have stored: the rows of delay_aggregates, vehicle_latest and trip_delay_latest, which
// records are dead letters, which are late, and what each partition's watermark ends at.
//
// It is the end-to-end tests' independent check, so it shares none of the processor's code
// path: no window.Windows, no watermark or ledger package, no consumer. It decodes with
// package event (whose own tests pin it down, and whose rejections the tests also compare
// with the generator's intent), and takes P90 from window.Merge of per-partition
// window.Stats with delay_aggregates' exact limit, by its quantile method, because the design
// defines the merged quantile as the deterministic digest's above that limit.
// Count, min, max and sum are accumulated here by hand.
//
// # Semantics (the design's, restated)
//
// A record's partition is [feed.Partition] of its key; its offset is its position among the
// records of that partition. Per partition, in offset order:
//
//   - a record that fails to decode is a dead letter;
//   - otherwise its event time is observed after the late test: an arrival prediction whose
//     window end is at or before the partition's watermark (max event time seen so far minus
//     the lateness, once an event has been seen, raised by any idle advance) is late and
//     changes nothing else;
//   - an admitted prediction adds its delay to its window under its four keys and offers its
//     trip_delay_latest row; an admitted position offers its vehicle_latest row.
//
// A window is in the sink once it is complete: every prediction partition that has a
// watermark has closed through its end. [Result.Aggregates] takes each partition's
// closed_through (as read back from the sink) and merges the partials of the complete
// windows, in (topic, partition) order. A state row
// wins over another of its key when its observed_at is later, or equal and later in offset
// order.
//
// # Idle advances
//
// An idle partition's watermark keeps pace with the processor's clock, which a plain pass over
// records cannot know: when it happened and how far it went depend on wall time. So the
// oracle takes the advances as input, observed from outside once they are final
// ([Config.Advances]: the partition, the offset of the next record, the watermark reached,
// read from the partition's closed_through or its commit metadata after the processor that
// made it stopped). Before deciding the record at that offset the oracle raises the
// partition's watermark to the advance (never lowers it), so that data then arriving for a
// window the advance closed is late, as the design says. Without advances the oracle holds
// for runs in which no partition went idle while it still had records to come.
package oracle

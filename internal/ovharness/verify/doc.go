// Package verify compares what the OV processor stored with what the oracle computed from the
// same records: the rows of delay_aggregates, vehicle_latest and trip_delay_latest, and the
// dead letters. The end-to-end tests and the reliability harness (package chaos) both use it,
// so that there is one definition of "the tables equal the oracle".
//
// # What is compared
//
//   - delay_aggregates: given each partition's closed_through as read back from the sink's
//     progress, the oracle's rows ([oracle.Result.Aggregates]); a row is missing, extra or
//     different (window_end, operator, event_count, min and max exact, mean to 1e-9, P90
//     exact);
//   - vehicle_latest and trip_delay_latest: the oracle's last-write-wins rows, every column the
//     processor derives from the input;
//   - dead letters: the distinct (source topic, partition, offset) of the letters on the
//     dlq.<topic> topics are exactly the oracle's dead letters, each with the original key,
//     value and error class. Redelivered copies of one letter are allowed (a letter is sent
//     again when its offset was not committed before a crash) but must be identical.
//
// Every difference is one [Mismatch]; a [Report] with none is the guarantee holding.
package verify

// Package bench is the credits example's end-to-end benchmark (credits bench): a feed of
// credits over many accounts, with a share of duplicates, conflicting ids and unknown
// accounts, produced to the in-process broker and consumed by the credits service through the
// real client into Postgres, at several batch sizes. Each run is compared with the feed's
// independent count: every account's balance, the set of markers and one entry per marker.
//
// A run reports credits/s from its first decision to the commit of its last record, and its
// ratio to a raw consumer of the same topic (the client alone, doing nothing). A replay of the
// topic into the fastest run's database measures the duplicate path: every credit finds its
// marker. A last run feeds a topic at a steady rate while the service consumes it, and
// measures the time from each record's produce call to the commit of its offset.
package bench

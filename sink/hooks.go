package sink

// Hook is a value that implements one or more of the Hook* interfaces of this package: the
// metrics of a sink implementation, reported to whoever observes it. Implementations find
// them by type assertion, so a metrics adapter implements only what it exports, and neither
// this package nor an implementation imports a metrics library.
//
// A hook is called after the call it reports, on the goroutine that made the call: an
// implementation that is safe for concurrent use (as sink/postgres and sink/mysql are) may
// call a hook from several goroutines at once. A hook must not block, and must not call the sink.
type Hook any

// HookWriteClose is called after each [WindowWriter.WriteClose] call.
type HookWriteClose interface {
	OnWriteClose(WriteCloseInfo)
}

// HookUpsertLatest is called after each [StateWriter.UpsertLatest] call.
type HookUpsertLatest interface {
	OnUpsertLatest(UpsertLatestInfo)
}

// WriteCloseInfo describes one WriteClose call. The row counts are those of the
// transaction that committed, zero when Err is set.
type WriteCloseInfo struct {
	// Batches and Partials count the close batches of the call and their partials.
	Batches, Partials int
	// Merged counts the merged rows written: the rows of windows the call completed, and
	// those rewritten when a partition registered later joined a folded window.
	Merged int
	// Compact counts the compact partial rows written: one per (window, partition) of the
	// call whose window is not complete yet.
	Compact int
	// Folded counts the folded windows written: one row per complete window, holding every
	// key's merged stats (see the package documentation, Complete windows and merged rows).
	Folded int
	// Ignored counts the partials dropped: replays of a partition already merged into its
	// window, and partials of windows whose merged rows are final.
	Ignored int
	// Progress counts the progress rows that changed.
	Progress int
	// Attempts counts the transactions tried; above 1, the earlier ones failed with
	// transient errors and were retried.
	Attempts int
	// Err is what the call returned.
	Err error
}

// UpsertLatestInfo describes the rows of one table in one UpsertLatest call: a call that
// writes several tables is reported once per table, each with the call's Attempts and Err.
type UpsertLatestInfo struct {
	Table string
	// Rows counts the rows sent, after the batch was collapsed to the newest row per key;
	// zero when Err is set. Rows older than the stored ones are sent and leave them as
	// they are.
	Rows int
	// Attempts counts the transactions tried (see [WriteCloseInfo.Attempts]).
	Attempts int
	Err      error
}

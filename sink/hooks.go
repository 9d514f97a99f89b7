package sink

import "fmt"

// Hook is a value that implements one or more of the Hook* interfaces of this package: the
// metrics of a sink implementation, reported to whoever observes it. Implementations find
// them by type assertion ([CheckHooks], [ReportWriteClose], [ReportUpsertLatest]), so a
// metrics adapter implements only what it exports, and neither this package nor an
// implementation imports a metrics library.
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
	// Folded counts the folded windows written (see package fold).
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

// CheckHooks returns an error wrapping [ErrInvalid], naming field and the index, for a hook
// that implements none of this package's hook interfaces: a mistake, such as a method
// with a pointer receiver on a value, that would otherwise go unnoticed.
func CheckHooks(field string, hooks []Hook) error {
	for i, h := range hooks {
		_, wc := h.(HookWriteClose)
		_, latest := h.(HookUpsertLatest)
		if !wc && !latest {
			return fmt.Errorf("%w: %s[%d]: %T implements none of sink.HookWriteClose and sink.HookUpsertLatest", ErrInvalid, field, i, h)
		}
	}
	return nil
}

// ReportWriteClose calls every hook in hooks that implements [HookWriteClose].
func ReportWriteClose(hooks []Hook, info WriteCloseInfo) {
	for _, h := range hooks {
		if o, ok := h.(HookWriteClose); ok {
			o.OnWriteClose(info)
		}
	}
}

// ReportUpsertLatest calls every hook in hooks that implements [HookUpsertLatest].
func ReportUpsertLatest(hooks []Hook, info UpsertLatestInfo) {
	for _, h := range hooks {
		if o, ok := h.(HookUpsertLatest); ok {
			o.OnUpsertLatest(info)
		}
	}
}

// UpsertLatestCall is the frame of an implementation's [StateWriter.UpsertLatest]: it
// prepares rows with [PrepareLatest] against spec, calls write with the groups unless there
// are none, and reports the call to the hooks that implement [HookUpsertLatest]: once per
// table written, or once for the first row's table when the call failed or wrote nothing.
// write returns the attempts it made.
func UpsertLatestCall(hooks []Hook, rows []StateRow, spec func(table string) (StateSpec, bool),
	write func(groups [][]StateRow) (attempts int, err error)) error {
	groups, err := PrepareLatest(rows, spec)
	attempts := 0
	if err == nil && len(groups) > 0 {
		attempts, err = write(groups)
	}
	if len(hooks) == 0 {
		return err
	}
	info := UpsertLatestInfo{Attempts: attempts, Err: err}
	if err != nil || len(groups) == 0 {
		if len(rows) > 0 {
			info.Table = rows[0].Table
		}
		ReportUpsertLatest(hooks, info)
		return err
	}
	for _, g := range groups {
		info.Table, info.Rows = g[0].Table, len(g)
		ReportUpsertLatest(hooks, info)
	}
	return nil
}

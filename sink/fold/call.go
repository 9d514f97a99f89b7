package fold

import (
	"time"

	"github.com/streamledger/streamledger/sink"
)

// WriteCloseCall is the frame of an implementation's [sink.WindowWriter.WriteClose]: it
// calls write, which plans and writes the call (with its retries) and returns the plan of
// the attempt that committed and the attempts made, and reports the call to the hooks that
// implement sink.HookWriteClose with the row counts of that plan. A call without batches
// writes and reports nothing.
func WriteCloseCall(hooks []sink.Hook, batches []sink.CloseBatch, write func() (*Plan, int, error)) error {
	if len(batches) == 0 {
		return nil
	}
	start := time.Now()
	plan, attempts, err := write()
	if len(hooks) == 0 {
		return err
	}
	info := sink.WriteCloseInfo{Batches: len(batches), Attempts: attempts, Err: err}
	for _, b := range batches {
		info.Partials += len(b.Partials)
	}
	if err == nil && plan != nil {
		plan.Report(&info)
	}
	info.Duration = time.Since(start)
	sink.ReportWriteClose(hooks, info)
	return err
}

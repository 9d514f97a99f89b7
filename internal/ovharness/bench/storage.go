package bench

import (
	"context"
	"fmt"
	"runtime/metrics"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/streamledger/streamledger/examples/ov/tables"
)

// serverMark is where the server stood when the pipeline phase started: its WAL position and
// its checkpoint count.
type serverMark struct {
	lsn         string
	checkpoints int64
}

// markServer reads the server's current WAL position and checkpoint count.
func markServer(ctx context.Context, pool *pgxpool.Pool) (serverMark, error) {
	var m serverMark
	if err := pool.QueryRow(ctx, "SELECT pg_current_wal_lsn()::text").Scan(&m.lsn); err != nil {
		return m, fmt.Errorf("bench: reading the WAL position: %w", err)
	}
	var err error
	m.checkpoints, err = checkpoints(ctx, pool)
	return m, err
}

// checkpoints returns the server's checkpoint count, timed and requested: from
// pg_stat_checkpointer from PostgreSQL 17, from pg_stat_bgwriter before it.
func checkpoints(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var version int
	if err := pool.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		return 0, fmt.Errorf("bench: reading the server's version: %w", err)
	}
	q := "SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter"
	if version >= 170000 {
		q = "SELECT num_timed + num_requested FROM pg_stat_checkpointer"
	}
	var n int64
	if err := pool.QueryRow(ctx, q).Scan(&n); err != nil {
		return 0, fmt.Errorf("bench: reading the checkpoint count: %w", err)
	}
	return n, nil
}

// measureStorage reads what the pipeline's writes cost: the WAL written and the checkpoints
// counted since start, the row writes of the window tables (merged rows, compact partials,
// folded windows) over the merged rows stored, and the tables' sizes. Call it once the
// pipeline's connections closed: a server process reports its table statistics when it ends.
func measureStorage(ctx context.Context, pool *pgxpool.Pool, schema string, start serverMark) (Storage, error) {
	var st Storage
	merged := tables.Aggregates().Table
	state := map[string]bool{}
	for _, s := range tables.Postgres("").States {
		state[s.Table] = true
	}
	// Statistics reach the shared counters shortly after the processes end.
	time.Sleep(500 * time.Millisecond)
	if err := pool.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint", start.lsn).Scan(&st.WALBytes); err != nil {
		return st, fmt.Errorf("bench: reading the WAL written: %w", err)
	}
	n, err := checkpoints(ctx, pool)
	if err != nil {
		return st, err
	}
	st.Checkpoints = n - start.checkpoints
	rows, err := pool.Query(ctx, `SELECT relname, n_tup_ins + n_tup_upd, pg_total_relation_size(relid)
		FROM pg_stat_user_tables WHERE schemaname = $1`, schema)
	if err != nil {
		return st, fmt.Errorf("bench: reading table statistics: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var writes, size int64
		if err := rows.Scan(&name, &writes, &size); err != nil {
			return st, err
		}
		switch {
		case name == merged:
			st.MergedBytes = size
			st.RowWrites += writes
		case name == merged+"_partials":
			st.PartialsBytes = size
			st.RowWrites += writes
		case name == merged+"_folded":
			st.FoldedBytes = size
			st.RowWrites += writes
		case state[name]:
			st.StateBytes += size
		case strings.HasPrefix(name, merged):
			st.RowWrites += writes
		}
	}
	if err := rows.Err(); err != nil {
		return st, err
	}
	q := fmt.Sprintf("SELECT count(*) FROM %q.%q", schema, merged)
	if err := pool.QueryRow(ctx, q).Scan(&st.StoredRows); err != nil {
		return st, fmt.Errorf("bench: counting merged rows: %w", err)
	}
	if st.StoredRows > 0 {
		st.RowWritesPerRow = float64(st.RowWrites) / float64(st.StoredRows)
		st.WALBytesPerRow = float64(st.WALBytes) / float64(st.StoredRows)
	}
	return st, nil
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// gcCPU is the CPU time the garbage collector spent so far (an estimate of the runtime's).
func gcCPU() time.Duration {
	s := []metrics.Sample{{Name: "/cpu/classes/gc/total:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return time.Duration(s[0].Value.Float64() * float64(time.Second))
}

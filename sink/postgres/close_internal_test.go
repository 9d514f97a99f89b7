package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/internal/fold"
	"github.com/streamledger/streamledger/window"
)

// firstFold returns the plan of a call that folds, for the first time, one window of one
// partition holding a key per id, key i with counts[i] values and owner attrs[i] (none for
// nil).
func firstFold(t *testing.T, s *Sink, start time.Time, ids []string, counts []int, attrs []*string) *fold.Plan {
	t.Helper()
	source := sink.TopicPartition{Topic: "t"}
	end := start.Add(5 * time.Minute)
	b := sink.CloseBatch{Source: source, ClosedThrough: end}
	for i, id := range ids {
		st := window.NewStats()
		for v := range counts[i] {
			require.NoError(t, st.Add(float64(v)))
		}
		data, err := st.MarshalBinary()
		require.NoError(t, err)
		p := sink.Partial{Key: sink.Key{WindowStart: start, Dimension: "line", DimensionID: id}, WindowEnd: end, Stats: data}
		if attrs[i] != nil {
			p.Attrs = map[string]string{"owner": *attrs[i]}
		}
		b.Partials = append(b.Partials, p)
	}
	c, err := fold.NewCall(s.codec, s.cfg.Aggregates, []sink.CloseBatch{b})
	require.NoError(t, err)
	c.SetProgress([]fold.Progress{{Source: source}}, nil)
	p, err := c.Plan(nil, nil, nil)
	require.NoError(t, err)
	require.True(t, p.Inserts())
	return p
}

// The merged rows of a first fold go in with COPY; a row that exists after all
// makes the write roll back to its savepoint and upsert instead, with the same outcome.
func TestFoldFallsBackToUpsert(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := pgtest.New(t)
	s, err := New(db.Pool, Config{Schema: db.Schema, Aggregates: sink.AggregateSpec{Attributes: []string{"owner"}}})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	start := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
	gvb := "GVB"
	write := func(p *fold.Plan) {
		t.Helper()
		require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error { return s.writePlan(ctx, tx, p, start) }))
	}
	write(firstFold(t, s, start, []string{"a"}, []int{1}, []*string{&gvb}))
	write(firstFold(t, s, start, []string{"a", "b"}, []int{3, 2}, []*string{nil, nil}))
	got, err := s.Aggregates(ctx, start)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, [2]int64{3, 2}, [2]int64{got[0].Count, got[1].Count}, "the existing row was replaced, the new one inserted")
	assert.Equal(t, map[string]string{"owner": "GVB"}, got[0].Attrs, "COALESCE kept the stored attribute")
	ct, err := s.ClosedThrough(ctx, sink.TopicPartition{Topic: "t"})
	require.NoError(t, err)
	assert.Equal(t, start.Add(5*time.Minute), ct[sink.TopicPartition{Topic: "t"}], "the rest of the plan was written once")
}

// A window of more merged rows than one COPY carries is sent in several, and a row
// that exists after all, found in a later COPY than the first, still rolls the whole
// write back to the savepoint: every row is written once, by the upserts.
func TestFoldOfManyRowsSendsThemInRoundTrips(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := pgtest.New(t)
	s, err := New(db.Pool, Config{Schema: db.Schema})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	start := time.Date(2026, 3, 2, 7, 0, 0, 0, time.UTC)
	n := 2*flushRows + 100
	ids, counts, attrs := make([]string, n), make([]int, n), make([]*string, n)
	for i := range n {
		ids[i], counts[i] = fmt.Sprintf("l%06d", i), 1+i%3
	}
	last := n - 1
	write := func(p *fold.Plan) {
		t.Helper()
		require.NoError(t, pgx.BeginFunc(ctx, db.Pool, func(tx pgx.Tx) error { return s.writePlan(ctx, tx, p, start) }))
	}
	write(firstFold(t, s, start, ids[last:], []int{7}, attrs[last:]))
	write(firstFold(t, s, start, ids, counts, attrs))
	got, err := s.Aggregates(ctx, start)
	require.NoError(t, err)
	require.Len(t, got, n)
	for i, a := range got {
		require.Equal(t, int64(counts[i]), a.Count, "key %s", a.DimensionID)
	}
}

package tables_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/examples/ov/event"
	"github.com/streamledger/streamledger/examples/ov/tables"
	"github.com/streamledger/streamledger/internal/pgtest"
	"github.com/streamledger/streamledger/sink"
	"github.com/streamledger/streamledger/sink/postgres"
)

func columns(t *testing.T, db *pgtest.DB, table string) []string {
	rows, err := db.Pool.Query(context.Background(), `SELECT column_name FROM information_schema.columns
		WHERE table_schema = $1 AND table_name = $2 ORDER BY ordinal_position`, db.Schema, table)
	require.NoError(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var c string
		require.NoError(t, rows.Scan(&c))
		out = append(out, c)
	}
	require.NoError(t, rows.Err())
	return out
}

// TestSeedTables migrates the OV tables and checks them against the seed: delay_aggregates has
// exactly the seed's columns, keyed by its window key, and no upsert adds.
func TestSeedTables(t *testing.T) {
	db := pgtest.New(t)
	s, err := postgres.New(db.Pool, tables.Postgres(db.Schema))
	require.NoError(t, err)
	require.NoError(t, s.Migrate(context.Background()))

	assert.Equal(t, []string{"window_start", "window_end", "dimension", "dimension_id", "operator", "event_count",
		"mean_delay_s", "p90_delay_s", "max_delay_s", "min_delay_s", "computed_at"}, columns(t, db, tables.AggregatesTable))
	assert.Equal(t, []string{"vehicle_id", "observed_at", "trip_id", "route_id", "operator", "lat", "lon", "bearing", "updated_at"},
		columns(t, db, tables.VehiclesTable))
	assert.Equal(t, []string{"trip_id", "observed_at", "line", "operator", "stop", "delay_s", "updated_at"},
		columns(t, db, tables.TripsTable))

	var pk string
	require.NoError(t, db.Pool.QueryRow(context.Background(), `SELECT pg_get_constraintdef(c.oid) FROM pg_constraint c
		JOIN pg_class r ON r.oid = c.conrelid JOIN pg_namespace n ON n.oid = r.relnamespace
		WHERE n.nspname = $1 AND r.relname = $2 AND c.contype = 'p'`, db.Schema, tables.AggregatesTable).Scan(&pk))
	assert.Equal(t, "PRIMARY KEY (window_start, dimension, dimension_id)", pk)

	addAfterUpdate := regexp.MustCompile(`(?is)DO UPDATE.*\+`)
	guard := 0
	for _, stmt := range s.Statements() {
		assert.False(t, addAfterUpdate.MatchString(stmt), "an upsert that adds: %s", stmt)
		if strings.Contains(stmt, tables.VehiclesTable) || strings.Contains(stmt, tables.TripsTable) {
			if strings.Contains(stmt, "DO UPDATE") {
				assert.Regexp(t, `WHERE\s+EXCLUDED\."?observed_at"?\s*>=`, stmt, "the seed's LWW guard")
				guard++
			}
		}
	}
	assert.Positive(t, guard)
}

// TestStateRows writes a vehicle and a trip through the sink and reads them back, then checks
// that an older row does not replace a newer one.
func TestStateRows(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	s, err := postgres.New(db.Pool, tables.Postgres(db.Schema))
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	at := time.Date(2026, 3, 10, 7, 0, 0, 0, time.UTC)
	pos := event.Position{VehicleID: "GVB:2045", TripID: "GVB:T1", Line: "GVB:17", Operator: "GVB", Lat: 52.37, Lon: 4.89, Bearing: 90, ObservedAt: at}
	pred := event.Prediction{TripID: "GVB:T1", VehicleID: "GVB:2045", Line: "GVB:17", Operator: "GVB", Stop: "NL:Q:1", DelayS: -12, ObservedAt: at}
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{tables.VehicleRow(pos)}))
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{tables.TripRow(pred)}))
	older := pred
	older.ObservedAt, older.DelayS, older.Stop = at.Add(-time.Minute), 999, "NL:Q:0"
	require.NoError(t, s.UpsertLatest(ctx, []sink.StateRow{tables.TripRow(older)}))

	var tripID, route, op string
	var lat, lon, bearing float64
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT trip_id, route_id, operator, lat, lon, bearing FROM vehicle_latest WHERE vehicle_id = 'GVB:2045'`).
		Scan(&tripID, &route, &op, &lat, &lon, &bearing))
	assert.Equal(t, []any{"GVB:T1", "GVB:17", "GVB", 52.37, 4.89, 90.0}, []any{tripID, route, op, lat, lon, bearing})
	var stop string
	var delay int32
	require.NoError(t, db.Pool.QueryRow(ctx, `SELECT stop, delay_s FROM trip_delay_latest WHERE trip_id = 'GVB:T1'`).Scan(&stop, &delay))
	assert.Equal(t, "NL:Q:1", stop)
	assert.Equal(t, int32(-12), delay)
}

func TestKeysOf(t *testing.T) {
	keys := tables.KeysOf(event.Prediction{Line: "RET:D", Operator: "RET", Stop: "NL:Q:7"})
	assert.Equal(t, [4]tables.Key{
		{Dimension: "line", ID: "RET:D", Operator: "RET"},
		{Dimension: "station", ID: "NL:Q:7"},
		{Dimension: "operator", ID: "RET", Operator: "RET"},
		{Dimension: "network", ID: "NL"},
	}, keys)
}

// A window key outlives its message: the key a window keeps must not point into the decoded
// text, which holds every text field of the message.
func TestRetainedKeysDoNotHoldTheMessageText(t *testing.T) {
	text := "RET:D" + "NL:Q:7" + "RET" + strings.Repeat("x", 64) // as the decoder cuts it
	p := event.Prediction{Line: text[:5], Stop: text[5:11], Operator: text[11:14]}
	start := uintptr(unsafe.Pointer(unsafe.StringData(text)))
	for _, k := range tables.KeysOf(p) {
		k2 := tables.Retain(k)
		assert.Equal(t, k, k2)
		for _, s := range []string{k2.ID, k2.Operator} {
			if s == "" || s == tables.NetworkID {
				continue
			}
			at := uintptr(unsafe.Pointer(unsafe.StringData(s)))
			assert.False(t, at >= start && at < start+uintptr(len(text)), "%q points into the message text", s)
		}
	}
}

// A key's copies are its own: two windows' keys of one line share nothing with each other
// or with the messages, a line key's identifier and operator are one allocation, and an
// operator key's identifier is its operator.
func TestRetainCopiesEachKey(t *testing.T) {
	msg1 := "RET:D|NL:Q:7|RET"
	msg2 := strings.Clone(msg1)
	k1 := tables.Retain(tables.KeysOf(event.Prediction{Line: msg1[:5], Stop: msg1[6:12], Operator: msg1[13:]})[0])
	k2 := tables.Retain(tables.KeysOf(event.Prediction{Line: msg2[:5], Stop: msg2[6:12], Operator: msg2[13:]})[0])
	assert.Equal(t, tables.Key{Dimension: "line", ID: "RET:D", Operator: "RET"}, k1)
	assert.Equal(t, k1, k2)
	assert.NotSame(t, unsafe.StringData(k1.ID), unsafe.StringData(k2.ID), "each key has its own copy")
	assert.Equal(t, uintptr(unsafe.Pointer(unsafe.StringData(k1.ID)))+uintptr(len(k1.ID)), uintptr(unsafe.Pointer(unsafe.StringData(k1.Operator))),
		"the operator follows the line in one allocation")
	op := tables.Retain(tables.KeysOf(event.Prediction{Line: msg2[:5], Stop: msg2[6:12], Operator: msg2[13:]})[2])
	assert.Equal(t, tables.Key{Dimension: "operator", ID: "RET", Operator: "RET"}, op)
	assert.Same(t, unsafe.StringData(op.ID), unsafe.StringData(op.Operator), "an operator key's identifier is its operator")
	network := tables.Retain(tables.KeysOf(event.Prediction{Line: msg2[:5], Stop: msg2[6:12], Operator: msg2[13:]})[3])
	assert.Equal(t, tables.Key{Dimension: "network", ID: tables.NetworkID}, network)
	assert.Equal(t, testing.AllocsPerRun(100, func() { tables.Retain(tables.Key{Dimension: "line", ID: msg1[:5], Operator: msg1[13:]}) }),
		1.0, "one allocation per key")
}

func TestRetainConcurrentUse(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 2000 {
				k := tables.Key{Dimension: "line", ID: fmt.Sprintf("L%d", (g*7+i)%500), Operator: "OP"}
				assert.Equal(t, k, tables.Retain(k))
			}
		})
	}
	wg.Wait()
}

// BenchmarkRetain retains the keys of a window of lines and stops: what each (window, key)
// costs when it first enters its window.
func BenchmarkRetain(b *testing.B) {
	keys := make([]tables.Key, 5000)
	for i := range keys {
		text := fmt.Sprintf("GVB:%d|stop-%d|GVB", i%400, i) // as the decoder cuts a message
		keys[i] = tables.KeysOf(event.Prediction{Line: text[:strings.IndexByte(text, '|')],
			Stop: text[strings.IndexByte(text, '|')+1 : strings.LastIndexByte(text, '|')], Operator: "GVB"})[i%2]
	}
	i := 0
	for b.Loop() {
		tables.Retain(keys[i%len(keys)])
		i++
	}
}

package pgtest

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewGivesAPrivateSchemaThatIsDropped(t *testing.T) {
	var schema string
	t.Run("inner", func(t *testing.T) {
		db := New(t)
		schema = db.Schema
		ctx := context.Background()
		_, err := db.Pool.Exec(ctx, "CREATE TABLE probe (id int)")
		require.NoError(t, err)
		var got string
		require.NoError(t, db.Pool.QueryRow(ctx,
			"SELECT table_schema FROM information_schema.tables WHERE table_name = 'probe' AND table_schema = $1", db.Schema).Scan(&got))
		assert.Equal(t, db.Schema, got, "an unqualified table lands in the private schema")
	})
	if schema == "" {
		t.Skip("inner test skipped: no server")
	}
	conn, err := pgx.Connect(context.Background(), URL())
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var n int
	require.NoError(t, conn.QueryRow(context.Background(),
		"SELECT count(*) FROM information_schema.schemata WHERE schema_name = $1", schema).Scan(&n))
	assert.Zero(t, n, "the schema is dropped when the test ends")
}

func TestUniqueName(t *testing.T) {
	a, b := uniqueName("TestX/sub case"), uniqueName("TestX/sub case")
	assert.NotEqual(t, a, b)
	assert.Regexp(t, `^t_testx_sub_case_[0-9a-f]{12}$`, a)
	long := uniqueName(string(make([]byte, 200)))
	assert.LessOrEqual(t, len(long), 63)
}

func TestRedact(t *testing.T) {
	assert.Equal(t, "postgres://u:xxx@h/db", redact("postgres://u:secret@h/db"))
	assert.Equal(t, DefaultURL, redact(DefaultURL))
}

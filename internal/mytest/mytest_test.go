package mytest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestNewIsolatesAndDrops(t *testing.T) {
	var name string
	var admin *DB
	t.Run("inner", func(t *testing.T) {
		db := New(t)
		name = db.Name
		_, err := db.DB.ExecContext(context.Background(), "CREATE TABLE probe (id INT PRIMARY KEY)")
		require.NoError(t, err)
		var got string
		require.NoError(t, db.DB.QueryRowContext(context.Background(), "SELECT DATABASE()").Scan(&got))
		require.Equal(t, db.Name, got)
	})
	admin = New(t)
	var n int
	require.NoError(t, admin.DB.QueryRowContext(context.Background(),
		"SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?", name).Scan(&n))
	require.Zero(t, n, "database %s is dropped when its test ends", name)
}

func TestUniqueName(t *testing.T) {
	a, b := uniqueName("TestX/sub case"), uniqueName("TestX/sub case")
	require.NotEqual(t, a, b)
	require.Regexp(t, `^t_testx_sub_case_[0-9a-f]{12}$`, a)
	require.LessOrEqual(t, len(uniqueName(string(make([]byte, 200)))), 64)
}

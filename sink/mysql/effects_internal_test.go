package mysql

import (
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/stretchr/testify/assert"
)

func TestDataError(t *testing.T) {
	state := func(s string) [5]byte { var b [5]byte; copy(b[:], s); return b }
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"out of range (22003)", &mysql.MySQLError{Number: 1264, SQLState: state("22003")}, true},
		{"data too long (22001)", &mysql.MySQLError{Number: 1406, SQLState: state("22001")}, true},
		{"duplicate key (23000)", &mysql.MySQLError{Number: 1062, SQLState: state("23000")}, true},
		{"MariaDB CHECK constraint (23000)", &mysql.MySQLError{Number: 4025, SQLState: state("23000")}, true},
		{"MySQL CHECK constraint (HY000)", &mysql.MySQLError{Number: 3819, SQLState: state("HY000")}, true},
		{"incorrect value (HY000)", &mysql.MySQLError{Number: 1366, SQLState: state("HY000")}, true},
		{"wrapped", fmt.Errorf("credit: %w", &mysql.MySQLError{Number: 1264, SQLState: state("22003")}), true},
		{"deadlock (40001)", &mysql.MySQLError{Number: 1213, SQLState: state("40001")}, false},
		{"syntax (42000)", &mysql.MySQLError{Number: 1064, SQLState: state("42000")}, false},
		{"not a server error", errors.New("boom"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, dataError(tc.err))
		})
	}
}

func TestValues(t *testing.T) {
	assert.Equal(t, "(?, ?)", values(1, 2))
	assert.Equal(t, "(?, ?, ?), (?, ?, ?)", values(2, 3))
	assert.Equal(t, "?", list(1))
	assert.Equal(t, "?, ?, ?", list(3))
}

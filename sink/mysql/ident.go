package mysql

import (
	"fmt"
	"strings"
)

// quote returns name as a MySQL identifier: in backquotes, with backquotes doubled. Every
// table and column name this package writes into SQL goes through it; values are always
// parameters.
func quote(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// checkName refuses names MySQL cannot hold: empty, longer than 64 characters, or with a
// NUL byte. field names the Config field in the error.
func checkName(field, name string) error {
	switch {
	case name == "":
		return fmt.Errorf("%s: empty identifier", field)
	case len([]rune(name)) > 64:
		return fmt.Errorf("%s: identifier %q is longer than MySQL's 64 characters", field, name)
	case strings.ContainsRune(name, 0):
		return fmt.Errorf("%s: identifier %q contains a NUL byte", field, name)
	}
	return nil
}

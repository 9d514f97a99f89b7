package tables

// MaxRetained is maxRetained, for the tests of package tables_test.
const MaxRetained = maxRetained

// Package configtest enforces the configuration rule every package of the module follows: in a
// Config, zero means the documented default and a negative value is accepted only where the
// field says what it means; anywhere else the constructor refuses it with an error that wraps
// the package's configuration sentinel and names the field.
//
// [Negative] sets every signed numeric field of a Config (durations included, nested structs
// followed) to -1, one at a time, and checks each against a table the test declares. A field
// the table does not name fails the test, so a field added later cannot escape the rule.
package configtest

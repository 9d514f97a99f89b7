package configtest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Case is what a Config does with -1 in one field.
type Case[C any] struct {
	// Field is the field's path from the Config, dotted for nested structs ("Retry.MaxAttempts").
	Field string
	// Refused means the constructor must return an error that wraps the sentinel and whose
	// message names Field.
	Refused bool
	// Accepted checks the meaning the field's documentation gives a negative value, on the
	// Config with the field at -1; the constructor must have accepted it. Exactly one of
	// Refused and Accepted is set.
	Accepted func(t *testing.T, cfg C)
}

// Negative checks every signed numeric field of base (time.Duration included, and the fields
// of nested structs) against cases: for each, a copy of base with that field at -1 is passed
// to build, whose error must match the field's case. base itself must build. A numeric field
// without a case, a case naming no such field, or a case with neither or both of Refused and
// Accepted fails the test.
func Negative[C any](t *testing.T, base C, sentinel error, build func(C) error, cases []Case[C]) {
	t.Helper()
	if err := build(base); err != nil {
		t.Fatalf("configtest: the base configuration must build: %v", err)
	}
	for _, p := range problems(base, cases) {
		t.Error(p)
	}
	for _, c := range cases {
		t.Run(c.Field, func(t *testing.T) {
			cfg := WithNegative(base, c.Field)
			if msg := judge(c.Field, c.Refused, build(cfg), sentinel); msg != "" {
				t.Fatal(msg)
			}
			if c.Accepted != nil {
				c.Accepted(t, cfg)
			}
		})
	}
}

// problems lists what is wrong with a table of cases for base: fields without a case, cases
// without a field, cases that set neither or both of Refused and Accepted.
func problems[C any](base C, cases []Case[C]) []string {
	var out []string
	fields := Fields(base)
	named := map[string]bool{}
	for _, c := range cases {
		if !slices.Contains(fields, c.Field) {
			out = append(out, fmt.Sprintf("configtest: case %q names no signed numeric field of %T (fields: %v)", c.Field, base, fields))
		}
		if c.Refused == (c.Accepted != nil) {
			out = append(out, fmt.Sprintf("configtest: case %q: set exactly one of Refused and Accepted", c.Field))
		}
		named[c.Field] = true
	}
	for _, f := range fields {
		if !named[f] {
			out = append(out, fmt.Sprintf("configtest: %T.%s has no case: say what a negative value means or refuse it", base, f))
		}
	}
	return out
}

// judge says what is wrong with err, the constructor's answer to field at -1, or "".
func judge(field string, refused bool, err, sentinel error) string {
	switch {
	case refused && err == nil:
		return fmt.Sprintf("%s = -1: expected an error naming the field, found none", field)
	case refused && !errors.Is(err, sentinel):
		return fmt.Sprintf("%s = -1: expected an error wrapping %v, found %v", field, sentinel, err)
	case refused && !strings.Contains(err.Error(), field):
		return fmt.Sprintf("%s = -1: expected the error to name %s, found %q", field, field, err)
	case !refused && err != nil:
		return fmt.Sprintf("%s = -1: the field documents a meaning for negative values, but the configuration was refused: %v", field, err)
	}
	return ""
}

// Fields returns the dotted paths of the signed numeric fields of cfg, a struct, following
// nested structs (not pointers, maps or slices), in declaration order.
func Fields(cfg any) []string {
	var out []string
	walk(reflect.TypeOf(cfg), "", func(path string, _ []int) { out = append(out, path) })
	return out
}

// WithNegative returns a copy of cfg with the signed numeric field at path set to -1.
func WithNegative[C any](cfg C, path string) C {
	v := reflect.ValueOf(&cfg).Elem()
	walk(v.Type(), "", func(p string, index []int) {
		if p != path {
			return
		}
		f := v.FieldByIndex(index)
		switch {
		case f.CanInt():
			f.SetInt(-1)
		case f.CanFloat():
			f.SetFloat(-1)
		}
	})
	return cfg
}

func walk(t reflect.Type, prefix string, visit func(path string, index []int)) {
	var rec func(t reflect.Type, prefix string, index []int)
	rec = func(t reflect.Type, prefix string, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			idx := append(slices.Clone(index), i)
			path := prefix + f.Name
			switch f.Type.Kind() {
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Float32, reflect.Float64:
				visit(path, idx)
			case reflect.Struct:
				if f.Type.PkgPath() != "time" { // time.Time is a value, not settings
					rec(f.Type, path+".", idx)
				}
			}
		}
	}
	rec(t, prefix, nil)
}

package credit_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/credits/internal/credit"
)

func TestDecode(t *testing.T) {
	e42 := credit.Credit{ID: "e42", Account: "a7", Amount: 10}
	for _, tc := range []struct {
		name  string
		in    string
		want  credit.Credit
		class string // empty: valid
		field string
	}{
		{name: "seed", in: `{"op_id":"e42","account":"a7","amount":10}`, want: e42},
		{name: "spacing and order", in: " {\n \"amount\" : 10, \"account\":\"a7\",\"op_id\":\"e42\"}\n", want: e42},
		{name: "escapes", in: `{"op_id":"e\u0034\u0032","account":"a7","amount":10}`, want: e42},
		{name: "unicode ids", in: `{"op_id":"été-1","account":"rekening-ß","amount":1}`, want: credit.Credit{ID: "été-1", Account: "rekening-ß", Amount: 1}},
		{name: "largest amount", in: `{"op_id":"x","account":"a","amount":9223372036854775807}`, want: credit.Credit{ID: "x", Account: "a", Amount: 1<<63 - 1}},

		{name: "empty", in: ``, class: credit.ClassMalformed},
		{name: "not json", in: `op_id=e42`, class: credit.ClassMalformed},
		{name: "truncated", in: `{"op_id":"e42","account":"a7"`, class: credit.ClassMalformed},
		{name: "array", in: `[{"op_id":"e42","account":"a7","amount":10}]`, class: credit.ClassMalformed},
		{name: "null", in: `null`, class: credit.ClassMalformed},
		{name: "trailing object", in: `{"op_id":"e42","account":"a7","amount":10}{}`, class: credit.ClassMalformed},
		{name: "trailing garbage", in: `{"op_id":"e42","account":"a7","amount":10} x`, class: credit.ClassMalformed},
		{name: "invalid utf-8", in: "{\"op_id\":\"e\xff\",\"account\":\"a7\",\"amount\":10}", class: credit.ClassMalformed},
		{name: "unknown field", in: `{"op_id":"e42","account":"a7","amount":10,"currency":"EUR"}`, class: credit.ClassMalformed, field: "currency"},
		{name: "repeated field", in: `{"op_id":"e42","account":"a7","amount":10,"amount":20}`, class: credit.ClassMalformed, field: "amount"},
		{name: "amount as string", in: `{"op_id":"e42","account":"a7","amount":"10"}`, class: credit.ClassMalformed, field: "amount"},
		{name: "amount fraction", in: `{"op_id":"e42","account":"a7","amount":10.5}`, class: credit.ClassMalformed, field: "amount"},
		{name: "amount exponent", in: `{"op_id":"e42","account":"a7","amount":1e1}`, class: credit.ClassMalformed, field: "amount"},
		{name: "amount null", in: `{"op_id":"e42","account":"a7","amount":null}`, class: credit.ClassMalformed, field: "amount"},
		{name: "id as number", in: `{"op_id":42,"account":"a7","amount":10}`, class: credit.ClassMalformed, field: "op_id"},
		{name: "account as object", in: `{"op_id":"e42","account":{"id":"a7"},"amount":10}`, class: credit.ClassMalformed, field: "account"},
		{name: "nul in id", in: `{"op_id":"e\u0000","account":"a7","amount":10}`, class: credit.ClassMalformed, field: "op_id"},
		{name: "newline in account", in: `{"op_id":"e42","account":"a\n7","amount":10}`, class: credit.ClassMalformed, field: "account"},
		{name: "id too long", in: `{"op_id":"` + strings.Repeat("x", credit.MaxIDLen+1) + `","account":"a7","amount":10}`, class: credit.ClassMalformed, field: "op_id"},

		{name: "no id", in: `{"account":"a7","amount":10}`, class: credit.ClassMissingField, field: "op_id"},
		{name: "empty id", in: `{"op_id":"","account":"a7","amount":10}`, class: credit.ClassMissingField, field: "op_id"},
		{name: "no account", in: `{"op_id":"e42","amount":10}`, class: credit.ClassMissingField, field: "account"},
		{name: "no amount", in: `{"op_id":"e42","account":"a7"}`, class: credit.ClassMissingField, field: "amount"},

		{name: "zero amount", in: `{"op_id":"e42","account":"a7","amount":0}`, class: credit.ClassAmount, field: "amount"},
		{name: "negative amount", in: `{"op_id":"e42","account":"a7","amount":-10}`, class: credit.ClassAmount, field: "amount"},
		{name: "amount beyond int64", in: `{"op_id":"e42","account":"a7","amount":9223372036854775808}`, class: credit.ClassAmount, field: "amount"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := credit.Decode([]byte(tc.in))
			if tc.class == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.want, c)
				return
			}
			require.Error(t, err)
			var ce *credit.Error
			require.True(t, errors.As(err, &ce), "an *Error, found %T", err)
			assert.Equal(t, tc.class, ce.Class)
			assert.Equal(t, tc.class, dlq.ErrorClass(err), "the dead-letter class")
			assert.Equal(t, tc.field, ce.Field)
			assert.ErrorIs(t, err, credit.ErrInvalid)
			assert.True(t, strings.HasPrefix(err.Error(), "credit: "), err.Error())
		})
	}
}

func TestPayloadIsCanonical(t *testing.T) {
	a, err := credit.Decode([]byte(`{"op_id":"e42","account":"a7","amount":10}`))
	require.NoError(t, err)
	b, err := credit.Decode([]byte(`{ "amount": 10, "account": "a7", "op_id": "e\u0034\u0032" }`))
	require.NoError(t, err)
	assert.Equal(t, a.Operation(), b.Operation(), "a re-serialized credit is the same operation")
	assert.Equal(t, `{"op_id":"e42","account":"a7","amount":10}`, string(a.Payload()))

	other := a
	other.Amount = 11
	assert.Equal(t, a.Operation().ID, other.Operation().ID)
	assert.NotEqual(t, a.Operation().Hash(), other.Operation().Hash(), "another amount under the same id is another payload")
	other = a
	other.Account = "a8"
	assert.NotEqual(t, a.Operation().Hash(), other.Operation().Hash(), "another account under the same id is another payload")
}

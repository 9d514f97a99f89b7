package credit_test

import (
	"fmt"

	"github.com/streamledger/streamledger/dlq"
	"github.com/streamledger/streamledger/examples/credits/internal/credit"
)

func ExampleDecode() {
	c, err := credit.Decode([]byte(`{"op_id": "e42", "account": "a7", "amount": 10}`))
	fmt.Println(c, err)
	fmt.Printf("%s\n", c.Operation().Payload)

	_, err = credit.Decode([]byte(`{"op_id": "e43", "account": "a7", "amount": 0}`))
	fmt.Println(dlq.ErrorClass(err), err)
	_, err = credit.Decode([]byte(`{"op_id": "e44", "account": "a7", "amount": 10`))
	fmt.Println(dlq.ErrorClass(err), err)
	// Output:
	// {e42 a7 10} <nil>
	// {"op_id":"e42","account":"a7","amount":10}
	// credit.amount credit: amount: a positive integer expected, found 0
	// credit.malformed credit: a complete JSON object expected, found the end of the message
}

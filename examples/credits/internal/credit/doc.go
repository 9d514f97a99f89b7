// Package credit is the message of the credits example: a credit of an amount to an account,
// identified by a stable operation id, as JSON on a Kafka topic.
//
// # Wire format
//
// A credit is one JSON object with exactly three fields:
//
//	{"op_id": "e42", "account": "a7", "amount": 10}
//
// op_id and account are non-empty strings of at most [MaxIDLen] bytes without control
// characters (Postgres text cannot hold NUL, and an id that cannot be stored would stop the
// consumer instead of being dead-lettered). amount is a positive integer in minor units that
// fits in an int64. [Decode] is strict: invalid UTF-8, unknown or repeated fields, values of
// the wrong type, fractions, exponents and trailing data are all errors, because a lenient
// decoder lets two different messages decode to the same credit, or one message to a credit
// its producer did not mean.
//
// # Identity
//
// [Credit.Operation] returns the [sink.Operation] the effect sink stores a marker for: the
// operation id and the credit's canonical encoding ([Credit.Payload]), whose hash tells a
// redelivery of the same credit (a duplicate) from a different credit reusing its id
// (a conflict). The canonical encoding does not depend on the spacing or field order of the
// message, so a producer that re-serializes a credit on retry still produces a duplicate.
//
// # Errors
//
// Every error of [Decode] is an [*Error] whose ErrorClass (see
// [github.com/streamledger/streamledger/dlq.ErrorClass]) names its cause for the dead-letter
// topic: [ClassMalformed], [ClassMissingField] or [ClassAmount].
package credit

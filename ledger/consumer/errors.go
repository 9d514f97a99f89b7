package consumer

import "errors"

// Errors returned by the consumer; test for them with errors.Is.
var (
	// ErrConfig: the Config cannot be used; the message says which field and why.
	ErrConfig = errors.New("consumer: invalid configuration")
	// ErrRunning: Run was called on a Consumer that is running or has run.
	ErrRunning = errors.New("consumer: Run called twice")
	// ErrAssign: the committed offsets or the sink's progress of newly assigned partitions
	// could not be read, so their watermarks cannot be restored; Run stops rather than decide
	// from a wrong watermark.
	ErrAssign = errors.New("consumer: cannot restore assigned partitions")
	// ErrUndecodable: a message failed to decode and no dead-letter topic is configured; Run
	// stops without committing it.
	ErrUndecodable = errors.New("consumer: undecodable message and no dead-letter topic")
	// ErrEffect: a batch of effects ([Config.ApplyEffects]) failed as a whole, or an effect's
	// result has no Outcome: it failed for a reason other than its message (a database that
	// stays unreachable, a timeout); Run stops after committing what is durable, which never
	// includes the batch, or that message, or anything after it in its partition.
	ErrEffect = errors.New("consumer: effect failed")
	// ErrAborted: the graceful shutdown was aborted (Abort, or ShutdownTimeout); what was not
	// yet durable was not committed.
	ErrAborted = errors.New("consumer: shutdown aborted")
	// ErrCommitTimeout: an offset commit did not return within 10 s (or before the shutdown
	// ran out of time); nothing of it is taken as committed, and it is sent again.
	ErrCommitTimeout = errors.New("consumer: commit timed out")
	// ErrCloseTimeout: the client did not close within what ShutdownTimeout left it, at
	// least a quarter of it (confluent-kafka-go issue 189); it was left behind.
	ErrCloseTimeout = errors.New("consumer: client close timed out")
	// ErrInternal: an invariant of the runtime broke (a bug); Run stops without committing
	// anything further.
	ErrInternal = errors.New("consumer: internal error")
)

// Command credits is streamledger's exactly-once effects example: credits (operation id,
// account, amount) arrive as JSON on a Kafka topic, and each changes a Postgres balance once,
// however often it is delivered.
//
// The boundary of that guarantee, in one sentence: within this database transaction and
// while operation identities are retained, repeated delivery produces one credit. The broker
// can still redeliver, and external calls require their own contract.
//
// # Usage
//
//	credits worked-example [flags]   the seed's walk-through: balance 100, credit e42 of 10,
//	                                 crash before the offset commit, balance stays 110
//	credits run [flags]              the consumer; without -brokers, a demonstration feed on
//	                                 an in-process broker
//	credits bench [flags]            1 M credits through the consumer at several batch sizes,
//	                                 checked against an independent count of the feed
//
// They run against the in-process broker (franz-go's kfake) unless -brokers names a Kafka
// cluster (bench always uses it), and against Postgres at DATABASE_URL (or -database). Run a
// command with -h for its flags.
//
// # How it works
//
// Credits are applied by streamledger's effect sink (sink/postgres Effects), a partition's
// credits in batches of one transaction each: every credit's marker (operation id, payload
// hash) and its credit commit together, or neither does. The consumer (internal/service) runs
// on streamledger's runtime (ledger/consumer): offsets are committed only past what is
// durable; invalid credits, unknown accounts, conflicting payloads and credits older than the
// marker horizon go to the dead-letter topic with their error class, and leave no marker. See
// README.md for the crash-point table, the retention horizon and the benchmark.
package main

// Package kafkatest starts an in-process Kafka-protocol broker (franz-go's kfake) for tests, and
// reads and writes records on it with a client independent of the code under test.
//
// # Starting a cluster
//
// [Start] runs a cluster for the life of one test (t.Cleanup closes it) with the topics of its
// [Config], and returns a [*Cluster]. [Cluster.Addr] is the bootstrap address; [Cluster.ConfigMap]
// is a confluent-kafka-go configuration pointing at it, with librdkafka's logging turned down so
// that test output stays readable (set KAFKATEST_LOG=1 to see it). The kfake cluster is embedded,
// so its control and inspection methods ([kfake.Cluster.Fault], [kfake.Cluster.GroupInfo],
// [kfake.Cluster.PartitionInfo]...) are at hand; closing it early simulates a dead broker.
//
// # Records
//
// [Cluster.Produce] writes [Record]s to exactly the partitions they name and waits for the
// broker's acknowledgement; [Cluster.ReadAll] reads every record of a topic, from the start to the
// high watermark of each partition as it is when called, with a fresh consumer that joins no
// group and commits nothing. Both use franz-go's kgo, so assertions never rely on the client
// being tested.
//
// # Faults
//
// [Cluster.FailProduce] makes the broker reject produce requests for a topic, the way a broker
// that lost leadership or denies access would.
package kafkatest

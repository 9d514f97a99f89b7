// Package broker is the OV example's local Kafka-protocol broker: a kfake cluster with the OV
// topics and their dead-letter topics, on one node or several, in memory or persisted to a
// directory so that it survives kill -9, with a watch of its consumer groups and a test
// endpoint for the reliability harness. It is for local runs and crash tests, not production.
//
// # Groups
//
// The watch prints a [GenerationLine] the first time it sees a generation of a group (a
// classic group's SyncGroup, a KIP-848 group's epoch): the rebalances the harness counts. It
// says when a classic rebalance has run for more than 30 s, with each member's last request,
// so that a group that forms no generation is never silent.
//
// It also expires the classic members kfake never times out. kfake starts a member's session
// timer when it hands a response to the member's connection; for a member that died while its
// JoinGroup waited (a process killed during a rebalance), whether it notices the closed
// connection or queues the response in the connection's buffer is a coin flip of a select, and
// about one such member in two gets no timer and stays in the group with partitions assigned
// that nobody consumes. Every later rebalance then waits for it until the rebalance timeout,
// which kfake restarts at each join, while kfake drops the live members that wait in JoinGroup
// (or in SyncGroup, for a dead leader) at their own session timeout, unanswered; each rejoins
// when its client gives up on the request (librdkafka: after max.poll.interval.ms + 3 s) and
// restarts the rebalance timeout again: with librdkafka's defaults the group formed no
// generation for more than 12 minutes. Kafka starts a session timer for every member of a
// generation when it forms, and keeps the members that wait in JoinGroup or SyncGroup alive;
// the watch sends a LeaveGroup for a member of a generation that has not synced, heartbeaten
// or committed in it for most of its session timeout (a second less, so that a dead leader
// goes before kfake drops the members waiting for it). [Config.NoExpiry] turns it off, to
// reproduce the wedge.
//
// # Test endpoint
//
// [Admin] serves, on loopback, what the harness needs of a broker it runs as a process: kfake
// faults (a request kind failing with a Kafka error, a number of times), partition leader
// moves, coordinator moves, node removal and a group's state; [Client] calls it.
package broker

// Package kafkaconf makes the librdkafka configuration a component hands its client: a copy
// of the user's, with the properties the component cannot work without forced (a user value
// that contradicts one is an error naming it, never silently replaced) and its defaults set
// where the user set nothing.
package kafkaconf

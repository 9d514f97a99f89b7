// Package figures keeps the figures the demo prints while it runs and in its report:
// messages decided, lag, ledger depth, commits, rows written. It is a consumer hook beside
// the Prometheus metrics of package prom (ledger/consumer/prom), which the demo and
// `ov run` serve on /metrics.
package figures

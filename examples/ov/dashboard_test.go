package main

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamledger/streamledger/ledger/consumer/prom"
)

// dashboard is the part of a Grafana dashboard model the test reads.
type dashboard struct {
	Title  string `json:"title"`
	Panels []struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

// recorder is a prometheus.Registerer that keeps what is registered.
type recorder struct{ cs []prometheus.Collector }

func (r *recorder) Register(c prometheus.Collector) error {
	r.cs = append(r.cs, c)
	return nil
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) { r.cs = append(r.cs, cs...) }
func (r *recorder) Unregister(prometheus.Collector) bool    { return false }

// exported returns the series names package prom exports: every metric's name, and for a
// histogram its _bucket, _sum and _count series.
func exported(t *testing.T) map[string]bool {
	rec := &recorder{}
	_, err := prom.New(rec)
	require.NoError(t, err)
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	out := map[string]bool{}
	for _, c := range rec.cs {
		ch := make(chan *prometheus.Desc, 4)
		go func() { c.Describe(ch); close(ch) }()
		_, h := c.(prometheus.Histogram)
		_, hv := c.(*prometheus.HistogramVec)
		for d := range ch {
			name := fqName.FindStringSubmatch(d.String())[1]
			out[name] = true
			if h || hv {
				out[name+"_bucket"], out[name+"_sum"], out[name+"_count"] = true, true, true
			}
		}
	}
	return out
}

// TestDashboardQueriesExportedMetrics loads the Grafana dashboard and checks that every
// metric its queries use is exported by package prom, and that it has the panels the design
// asks for: lag beside the ledger's depth, late and dead-letter rates, write latency.
func TestDashboardQueriesExportedMetrics(t *testing.T) {
	raw, err := os.ReadFile("grafana/dashboard.json")
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(raw, &d))
	require.NotEmpty(t, d.Panels)

	names := exported(t)
	ident := regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	queried := map[string][]string{} // panel title -> metrics
	for _, p := range d.Panels {
		require.NotEmpty(t, p.Targets, "panel %q has no query", p.Title)
		for _, tg := range p.Targets {
			assert.Equal(t, strings.Count(tg.Expr, "("), strings.Count(tg.Expr, ")"), "unbalanced: %s", tg.Expr)
			for _, id := range ident.FindAllString(tg.Expr, -1) {
				if strings.HasPrefix(id, "processor_") {
					assert.True(t, names[id], "panel %q queries %s, which package prom does not export", p.Title, id)
					queried[p.Title] = append(queried[p.Title], id)
				}
			}
		}
		assert.NotEmpty(t, queried[p.Title], "panel %q queries no metric of the processor", p.Title)
	}
	has := func(metrics ...string) bool {
		for _, ms := range queried {
			if !slices.ContainsFunc(metrics, func(m string) bool { return !slices.Contains(ms, m) }) {
				return true
			}
		}
		return false
	}
	assert.True(t, has("processor_consumer_lag", "processor_uncommitted_messages"), "lag beside the ledger's depth, in one panel")
	assert.True(t, has("processor_late_events_total", "processor_dead_letters_total"), "late and dead-letter rates")
	assert.True(t, has("processor_sink_write_duration_seconds_bucket"), "write latency")
}

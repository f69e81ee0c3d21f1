// promparse reads Prometheus text exposition format on stdin with Prometheus's own parser
// (github.com/prometheus/common/expfmt) and prints the metric families as JSON. Tests use it to
// check that GET /metrics is valid for a real Prometheus scrape.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

type sample struct {
	Labels map[string]string `json:"labels"`
	// Values are strings, as in the text format: NaN and ±Inf are valid values but not JSON numbers.
	Value  string            `json:"value,omitempty"`
	Count  *uint64           `json:"count,omitempty"`
	Sum    string            `json:"sum,omitempty"`
	Bucket map[string]uint64 `json:"buckets,omitempty"`
}

type family struct {
	Name    string   `json:"name"`
	Help    string   `json:"help"`
	Type    string   `json:"type"`
	Metrics []sample `json:"metrics"`
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func main() {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	sort.Strings(names)
	out := []family{}
	for _, n := range names {
		f := families[n]
		fam := family{Name: n, Help: f.GetHelp(), Type: f.GetType().String(), Metrics: []sample{}}
		for _, m := range f.GetMetric() {
			s := sample{Labels: map[string]string{}}
			for _, l := range m.GetLabel() {
				s.Labels[l.GetName()] = l.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				s.Value = num(m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				s.Value = num(m.GetGauge().GetValue())
			case dto.MetricType_UNTYPED:
				s.Value = num(m.GetUntyped().GetValue())
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				c := h.GetSampleCount()
				s.Count, s.Sum = &c, num(h.GetSampleSum())
				s.Bucket = map[string]uint64{}
				for _, b := range h.GetBucket() {
					s.Bucket[fmt.Sprint(b.GetUpperBound())] = b.GetCumulativeCount()
				}
			case dto.MetricType_SUMMARY:
				c := m.GetSummary().GetSampleCount()
				s.Count, s.Sum = &c, num(m.GetSummary().GetSampleSum())
			}
			fam.Metrics = append(fam.Metrics, s)
		}
		out = append(out, fam)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

package main

import (
	"math"
	"slices"
	"time"
)

// latencySummary describes a set of request durations exactly: every
// duration is kept and sorted, no histogram buckets.
type latencySummary struct {
	Count              int
	Mean, Min          time.Duration
	P50, P90, P99, Max time.Duration
}

// summarize sorts d in place and returns its percentiles. An empty d gives
// the zero summary.
func summarize(d []time.Duration) latencySummary {
	if len(d) == 0 {
		return latencySummary{}
	}
	slices.Sort(d)
	total := 0.0
	for _, x := range d {
		total += float64(x)
	}
	return latencySummary{
		Count: len(d),
		Mean:  time.Duration(total / float64(len(d))),
		Min:   d[0],
		P50:   percentile(d, 50),
		P90:   percentile(d, 90),
		P99:   percentile(d, 99),
		Max:   d[len(d)-1],
	}
}

// percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest value such that at least p% of the
// values are at or below it. It returns 0 for an empty slice.
func percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

// millis converts a duration to fractional milliseconds, the unit of the
// tables and of the JSON results.
func millis(d time.Duration) float64 {
	return float64(d) / float64(time.Millisecond)
}

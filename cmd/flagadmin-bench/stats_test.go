package main

import (
	"math/rand/v2"
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = ms(i + 1) // 1..100 ms
	}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"empty", nil, 50, 0},
		{"one value, p50", []time.Duration{ms(7)}, 50, ms(7)},
		{"one value, p99", []time.Duration{ms(7)}, 99, ms(7)},
		{"two values, p50 is the lower", []time.Duration{ms(1), ms(2)}, 50, ms(1)},
		{"two values, p51 is the upper", []time.Duration{ms(1), ms(2)}, 51, ms(2)},
		{"1..100, p50", hundred, 50, ms(50)},
		{"1..100, p90", hundred, 90, ms(90)},
		{"1..100, p99", hundred, 99, ms(99)},
		{"1..100, p100", hundred, 100, ms(100)},
		{"1..100, p0.5 is the first", hundred, 0.5, ms(1)},
		{"1..100, p99.5 rounds up", hundred, 99.5, ms(100)},
		{"ten values, p99 is the max", []time.Duration{ms(1), ms(2), ms(3), ms(4), ms(5), ms(6), ms(7), ms(8), ms(9), ms(10)}, 99, ms(10)},
		{"ten values, p90 is the ninth", []time.Duration{ms(1), ms(2), ms(3), ms(4), ms(5), ms(6), ms(7), ms(8), ms(9), ms(10)}, 90, ms(9)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.sorted, tc.p); got != tc.want {
				t.Errorf("percentile(p%v) = %v, want %v", tc.p, got, tc.want)
			}
		})
	}
}

func TestSummarizeSortsAndDescribes(t *testing.T) {
	d := make([]time.Duration, 1000)
	for i := range d {
		d[i] = ms(i + 1)
	}
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(d), func(i, j int) { d[i], d[j] = d[j], d[i] })
	s := summarize(d)
	want := latencySummary{Count: 1000, Mean: 500*time.Millisecond + 500*time.Microsecond, Min: ms(1),
		P50: ms(500), P90: ms(900), P99: ms(990), Max: ms(1000)}
	if s != want {
		t.Errorf("summarize = %+v, want %+v", s, want)
	}
	for i := 1; i < len(d); i++ {
		if d[i-1] > d[i] {
			t.Fatalf("summarize left the durations unsorted at %d", i)
		}
	}
}

func TestSummarizeEmpty(t *testing.T) {
	if s := summarize(nil); s != (latencySummary{}) {
		t.Errorf("summarize(nil) = %+v, want the zero summary", s)
	}
}

func TestMillis(t *testing.T) {
	if got := millis(1500 * time.Microsecond); got != 1.5 {
		t.Errorf("millis(1.5ms) = %v, want 1.5", got)
	}
}

func TestThousands(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0"}, {999, "999"}, {1000, "1,000"}, {1234567, "1,234,567"}, {-1234, "-1,234"}, {100000, "100,000"}} {
		if got := thousands(tc.n); got != tc.want {
			t.Errorf("thousands(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name string
		in   []time.Duration
		p    float64
		want time.Duration
	}{
		{"no samples give zero", nil, 50, 0},
		{"one sample is every percentile", ms(7), 99, 7 * time.Millisecond},
		{"median of ten is the fifth by nearest rank", ms(10, 9, 8, 7, 6, 5, 4, 3, 2, 1), 50, 5 * time.Millisecond},
		{"p90 of ten is the ninth", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 90, 9 * time.Millisecond},
		{"p99 of ten is the largest", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
		{"p100 is the largest", ms(3, 1, 2), 100, 3 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.in, tt.p); got != tt.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tt.in, tt.p, got, tt.want)
			}
		})
	}
}

func TestSpanIgnoresZeroTimes(t *testing.T) {
	base := time.Unix(1000, 0)
	first, last := span([]time.Time{{}, base.Add(3 * time.Second), base, {}, base.Add(time.Second)})
	if !first.Equal(base) || !last.Equal(base.Add(3*time.Second)) {
		t.Errorf("span = %v..%v, want %v..%v", first, last, base, base.Add(3*time.Second))
	}
}

func TestParseLevels(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []int
		wantErr string
	}{
		{in: "0,200,1000", want: []int{0, 200, 1000}},
		{in: " 5 ", want: []int{5}},
		{in: "0,0", wantErr: "0 comes after 0"},
		{in: "200,0", wantErr: "0 comes after 200"},
		{in: "1001", wantErr: `"1001" is not a backlog depth`},
		{in: "-1", wantErr: `"-1" is not a backlog depth`},
		{in: "x", wantErr: `"x" is not a backlog depth`},
		{in: "", wantErr: `"" is not a backlog depth`},
	} {
		got, err := parseLevels(tc.in)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("parseLevels(%q) = %v, %v; want an error with %q", tc.in, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("parseLevels(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

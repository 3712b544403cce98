package podgroup

import (
	"testing"
	"time"
)

func TestSoonest(t *testing.T) {
	cases := []struct {
		name string
		in   []time.Duration
		want time.Duration
	}{
		{name: "nothing to wait for", want: 0},
		{name: "zeros mean no timer", in: []time.Duration{0, 0}, want: 0},
		{name: "the smallest positive wins", in: []time.Duration{0, 30 * time.Second, time.Millisecond, 11 * time.Second}, want: time.Millisecond},
		{name: "negative durations are ignored", in: []time.Duration{-time.Second, 5 * time.Second}, want: 5 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := soonest(tc.in...); got != tc.want {
				t.Errorf("soonest(%v) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

func TestUntilNext(t *testing.T) {
	cases := []struct {
		name      string
		nextCheck time.Time
		want      time.Duration
	}{
		{name: "no deleted pod, no timer", want: 0},
		{name: "one second past the end of the grace period", nextCheck: t0.Add(10 * time.Second), want: 11 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := (&requeueTimers{nextCheck: tc.nextCheck}).untilNext(t0); got != tc.want {
				t.Errorf("untilNext = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestRequeueAfter checks that a sync's answer to the queue is the soonest of
// its own waits and the timers its steps set.
func TestRequeueAfter(t *testing.T) {
	cases := []struct {
		name   string
		timers requeueTimers
		waits  []time.Duration
		want   time.Duration
	}{
		{name: "no timer and no wait: not requeued", want: 0},
		{name: "a wait alone", waits: []time.Duration{0, 3 * time.Second}, want: 3 * time.Second},
		{name: "a grace period ending first wins", timers: requeueTimers{nextCheck: t0.Add(time.Second)}, waits: []time.Duration{time.Minute}, want: 2 * time.Second},
		{name: "a reservation timing out first wins", timers: requeueTimers{nextCheck: t0.Add(time.Minute), reserveAfter: 5 * time.Second}, waits: []time.Duration{10 * time.Second}, want: 5 * time.Second},
		{name: "a wait sooner than every timer wins", timers: requeueTimers{reserveAfter: 5 * time.Second}, waits: []time.Duration{time.Millisecond}, want: time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.timers.requeueAfter(t0, tc.waits...); got != tc.want {
				t.Errorf("requeueAfter = %s, want %s", got, tc.want)
			}
		})
	}
}

package capacityadmission

import (
	"fmt"
	"testing"
	"time"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// TestParkedFlushIsBounded: gangs parked together come due for their
// flush together, and they are let go at parkedFlushRate a second,
// parkedFlushPerCycle at once at the most, so that no cycle, nor a busy
// second of cycles, places the whole backlog; a gang that a change helps
// is let go whatever the pace.
func TestParkedFlushIsBounded(t *testing.T) {
	t0 := time.Unix(10000, 0)
	q := newAdmissionQueue()
	const gangs = 10 // 10 = 4 + 1 + 4 + 1, as the cases take them
	park := func(key scheduling.GroupKey) {
		q.candidates[key] = capacity.Candidate{Key: key, Need: 1}
		q.park(capacity.Verdict{Key: key, Hint: &capacity.Hint{}}, t0)
	}
	for i := range gangs {
		park(scheduling.GroupKey{Namespace: "ns", Name: fmt.Sprintf("g%d", i)})
	}
	helped := scheduling.GroupKey{Namespace: "ns", Name: "helped"}
	park(helped)
	s := capacity.NewTracker(false).Snapshot(nil)

	tests := []struct {
		name      string
		at        time.Time
		requested bool
		want      int // parked after the cycle
	}{
		{"before the flush", t0.Add(parkedFlush - time.Second), false, gangs + 1},
		{"a change helps one, none due", t0.Add(parkedFlush - time.Second), true, gangs},
		{"first cycle due: a full bucket", t0.Add(parkedFlush), false, gangs - parkedFlushPerCycle},
		{"a cycle at once after it", t0.Add(parkedFlush), false, gangs - parkedFlushPerCycle},
		{"a quarter of a second on: one", t0.Add(parkedFlush + time.Second/4), false, gangs - parkedFlushPerCycle - 1},
		{"seconds on: no more than a cycle's worth", t0.Add(parkedFlush + time.Minute), false, gangs - 2*parkedFlushPerCycle - 1},
		{"the last", t0.Add(parkedFlush + 2*time.Minute), false, 0},
	}
	for _, tt := range tests {
		ch := capacity.Changes{}
		if tt.requested {
			ch.Requested = map[scheduling.GroupKey]bool{helped: true}
		}
		q.unparkHelped(ch, s, tt.at)
		if got := len(q.parked); got != tt.want {
			t.Errorf("%s: %d parked, want %d", tt.name, got, tt.want)
		}
		if tt.name == "first cycle due: a full bucket" {
			// Gangs are still due: a cycle is asked for, within a second,
			// with no event.
			drain(q.kick)
			select {
			case <-q.kick:
			case <-time.After(3 * time.Second):
				t.Errorf("%s: no cycle asked for the gangs still due", tt.name)
			}
		}
	}
}

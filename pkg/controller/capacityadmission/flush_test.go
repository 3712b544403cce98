package capacityadmission

import (
	"fmt"
	"testing"
	"time"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// TestParkedFlushIsBounded: gangs parked together come due for their
// flush together, and each cycle lets go of parkedFlushPerCycle of them at
// the most, so that no one cycle places the whole backlog; a gang that a
// change helps is let go whatever the bound.
func TestParkedFlushIsBounded(t *testing.T) {
	t0 := time.Unix(10000, 0)
	q := newAdmissionQueue()
	const gangs = 10
	for i := range gangs {
		q.park(capacity.Verdict{Key: scheduling.GroupKey{Namespace: "ns", Name: fmt.Sprintf("g%d", i)}, Hint: &capacity.Hint{}}, t0)
	}
	helped := scheduling.GroupKey{Namespace: "ns", Name: "helped"}
	q.park(capacity.Verdict{Key: helped, Hint: &capacity.Hint{}}, t0)
	s := capacity.NewTracker(false).Snapshot(nil)

	tests := []struct {
		name      string
		at        time.Time
		requested bool
		want      int // parked after the cycle
	}{
		{"before the flush", t0.Add(parkedFlush - time.Second), false, gangs + 1},
		{"a change helps one, none due", t0.Add(parkedFlush - time.Second), true, gangs},
		{"first cycle due", t0.Add(parkedFlush), false, gangs - parkedFlushPerCycle},
		{"second cycle due", t0.Add(parkedFlush + time.Second), false, gangs - 2*parkedFlushPerCycle},
		{"third cycle due", t0.Add(parkedFlush + 2*time.Second), false, 0},
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
	}
}

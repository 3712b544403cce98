package podgroup

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/component-base/metrics/testutil"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// TestSyncRecoversPanic: a sync that panics returns an error (so the key
// is retried with backoff) instead of taking the controller down, counts
// the panic, tells it on the group when the group exists, and writes
// nothing to the group's pods.
func TestSyncRecoversPanic(t *testing.T) {
	panicking := func(context.Context, scheduling.GroupKey) (time.Duration, error) {
		var m map[string]int
		m["boom"]++ // a nil map: the kind of bug tenant input could reach.
		return 0, nil
	}
	cases := []struct {
		name      string
		key       scheduling.GroupKey
		wantEvent bool
	}{
		{"a group that exists is told with a Warning event", testKey, true},
		{"a group that is gone only logs and counts", scheduling.NewGroupKey(testNS, "gone"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, objects(newGroup(2), pods("p", 2)...)...)
			before, _ := testutil.GetCounterMetricValue(h.c.metrics.syncPanics)
			after, err := h.c.syncRecovering(context.Background(), tc.key, panicking)
			if err == nil || !strings.Contains(err.Error(), "panicked") || after != 0 {
				t.Fatalf("syncRecovering = %v, %v; want an error that says the sync panicked, and no requeue delay", after, err)
			}
			if got, _ := testutil.GetCounterMetricValue(h.c.metrics.syncPanics); got-before != 1 {
				t.Errorf("muster_controller_sync_panics_total rose by %v, want 1", got-before)
			}
			events := h.events()
			if tc.wantEvent {
				if len(events) != 1 || !strings.HasPrefix(events[0], "Warning "+scheduling.EventSyncPanicked+" the controller failed on this group (assignment to entry in nil map)") {
					t.Errorf("events = %q, want one SyncPanicked Warning naming the panic", events)
				}
			} else if len(events) != 0 {
				t.Errorf("events = %q, want none for a group that is gone", events)
			}
			if got := h.mutations(); len(got) != 0 {
				t.Errorf("writes = %q, want none: the group's pods stay as they were", got)
			}
		})
	}
}

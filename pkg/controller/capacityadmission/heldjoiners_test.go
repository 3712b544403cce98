package capacityadmission

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// TestHeldPlacementsForgetADeletedGroup: what is held of a group goes with
// it, and only its own.
func TestHeldPlacementsForgetADeletedGroup(t *testing.T) {
	h := &heldPlacements{
		since:   map[scheduling.GroupKey]map[types.UID]time.Time{gk("ns/a"): {"u1": time.Unix(1, 0)}, gk("ns/b"): {"u2": time.Unix(2, 0)}},
		expired: map[scheduling.GroupKey]podsShape{gk("ns/a"): {pods: 3, active: 3}, gk("ns/b"): {pods: 1, active: 1}},
	}
	h.forget(gk("ns/a"))
	if _, ok := h.since[gk("ns/a")]; ok {
		t.Error("the deleted group's held clocks are still remembered")
	}
	if _, ok := h.expired[gk("ns/a")]; ok {
		t.Error("the deleted group's expired shape is still remembered")
	}
	if len(h.since[gk("ns/b")]) != 1 || h.expired[gk("ns/b")] != (podsShape{pods: 1, active: 1}) {
		t.Errorf("another group's memory changed: since %v, expired %v", h.since, h.expired)
	}
}

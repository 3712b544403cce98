package podgroup

import (
	"fmt"
	"testing"
	"time"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// TestStatusWritesOfAGang follows a gang of 8 whose pods arrive, start and
// finish a few milliseconds apart, as a framework creates them and as they
// run, and counts the group's status writes: at most 2 from the group's
// creation to the release of its pods, and at most 2 from the first pod
// finishing to the last one counted, in KEP-2307's order.
func TestStatusWritesOfAGang(t *testing.T) {
	const n = 8
	h := newHarness(t, nil, objects(newGroup(n))...)
	writes := len(h.statusWrites())
	h.sync()
	writes += len(h.statusWrites())

	ps := pods("w", n)
	for _, p := range ps {
		h.addPod(p.DeepCopy())
		h.step(5 * time.Millisecond)
		writes += len(h.statusWrites())
	}
	for _, p := range ps {
		if scheduling.HasGate(h.pod(p.Name)) {
			t.Fatalf("%s still gated after the gang arrived", p.Name)
		}
	}
	if writes > 2 {
		t.Errorf("%d status writes from creation to release, want at most 2", writes)
	}

	// The pods are bound and run; a few seconds later they finish.
	for i, p := range ps {
		cur := h.pod(p.Name)
		onNode(fmt.Sprintf("n%d", i))(cur)
		running(cur)
		h.setPod(cur)
		h.step(5 * time.Millisecond)
	}
	h.step(2 * time.Second) // the counters' refresh
	writes = 0
	for _, p := range ps {
		cur := h.pod(p.Name)
		succeeded(cur)
		h.setPod(cur)
		h.step(5 * time.Millisecond)
		writes += len(h.statusWrites())
	}
	for d := h.step(0); d > 0; d = h.step(d) {
		writes += len(h.statusWrites())
	}
	writes += len(h.statusWrites())
	pg := h.group()
	wantCounts(t, pg, n, 0)
	if !isFinished(pg) {
		t.Errorf("group not finished: %+v", pg.Status.Conditions)
	}
	if writes > 2 {
		t.Errorf("%d status writes from the first pod finished to the last counted, want at most 2", writes)
	}
}

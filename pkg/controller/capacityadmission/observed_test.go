package capacityadmission

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// TestCycleLeavesOutUnobservedPods: a gang offered with a pod the tracker
// has not observed yet (its sync read the informer's store ahead of the
// handlers) is not placed until the pod is observed, so that no placement
// is assumed for a pod that would hold nothing. Under StrictFIFO the gangs
// behind it wait too; under BestEffortFIFO they go ahead.
func TestCycleLeavesOutUnobservedPods(t *testing.T) {
	f := testFilters(t)
	tests := []struct {
		strategy capacity.QueueingStrategy
		// behind says whether the newer gang, all observed, is admitted
		// while the older one waits for its pod.
		behind bool
	}{
		{capacity.BestEffortFIFO, true},
		{capacity.StrictFIFO, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.strategy), func(t *testing.T) {
			w := newWorld(f)
			w.mode.strategy = tt.strategy
			w.mode.setNode(testNode("n1", 4, "a"))
			older, newer := scheduling.GroupKey{Namespace: "ns", Name: "older"}, scheduling.GroupKey{Namespace: "ns", Name: "newer"}
			olderPods := []*corev1.Pod{testPod("older", "o-0", 1000, ""), testPod("older", "o-1", 1000, "")}
			newerPods := []*corev1.Pod{testPod("newer", "n-0", 1000, "")}
			for _, p := range append(olderPods, newerPods...) {
				p.ResourceVersion = w.nextRV()
			}
			w.pods[older], w.pods[newer] = olderPods, newerPods
			// o-1 is in the store, and not yet observed.
			w.mode.ObservePod(olderPods[0], false)
			w.mode.ObservePod(newerPods[0], false)
			now := w.clk.Now()
			w.mode.queue.offer(capacity.Candidate{Key: older, Pods: olderPods, Need: 2, Created: now.Add(-time.Minute)})
			w.mode.queue.offer(capacity.Candidate{Key: newer, Pods: newerPods, Need: 1, Created: now})

			admitted, _ := w.cycle()
			if _, ok := admitted["o-0"]; ok {
				t.Fatalf("the gang with an unobserved pod was admitted: %v", admitted)
			}
			if _, ok := admitted["n-0"]; ok != tt.behind {
				t.Errorf("the gang behind it admitted: %v, want %v (%v)", ok, tt.behind, admitted)
			}
			drain(w.mode.queue.kick)
			w.mode.ObservePod(olderPods[1], false)
			if !drain(w.mode.queue.kick) {
				t.Fatal("observing the pod asks for no cycle")
			}
			admitted, _ = w.cycle()
			if admitted["o-0"] != "n1" || admitted["o-1"] != "n1" {
				t.Errorf("once observed, the gang admitted %v, want both its pods on n1", admitted)
			}
			if _, ok := admitted["n-0"]; ok == tt.behind {
				t.Errorf("the gang behind admitted in the second cycle: %v, want %v", ok, !tt.behind)
			}
		})
	}
}

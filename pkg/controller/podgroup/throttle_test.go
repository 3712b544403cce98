package podgroup

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// TestStatusWriteThrottling checks which status changes are written at once
// (decisions) and which wait for the batch period (counters and messages).
func TestStatusWriteThrottling(t *testing.T) {
	cases := []struct {
		name  string
		objs  []*corev1.Pod
		group *v1alpha1.PodGroup
		// change runs after a first sync has written status.
		change func(h *harness)
		// wantWrites is the number of status writes of the second sync.
		wantWrites int
		// wantRequeue says the second sync asked to come back to flush.
		wantRequeue bool
	}{{
		name:        "a pod more in a waiting group only refreshes counters: deferred",
		group:       newGroup(5),
		objs:        pods("p", 2),
		change:      func(h *harness) { h.addPod(newPod("p-2")) },
		wantWrites:  0,
		wantRequeue: true,
	}, {
		name:       "the pod that completes the gang is a decision: written at once",
		group:      newGroup(3),
		objs:       pods("p", 2),
		change:     func(h *harness) { h.addPod(newPod("p-2")) },
		wantWrites: 1,
	}, {
		name:        "a pod becoming ready in a running group is deferred",
		group:       admitted(2),
		objs:        pods("p", 2, ungated, onNode("n"), running),
		change:      func(h *harness) { h.setPod(newPod("p-0", ungated, onNode("n"), running, ready)) },
		wantWrites:  0,
		wantRequeue: true,
	}, {
		name:       "a finished pod is recorded at once when nothing else is active",
		group:      admitted(1),
		objs:       pods("p", 1, ungated, onNode("n"), running),
		change:     func(h *harness) { h.setPod(newPod("p-0", ungated, onNode("n"), succeeded)) },
		wantWrites: 2, // record the UID; then count it and finish, in one write
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, objects(tc.group, tc.objs...)...)
			h.sync()
			h.observe()
			h.reset()
			tc.change(h)
			h.observe()
			h.reset()
			requeue := h.sync()
			if got := len(h.statusWrites()); got != tc.wantWrites {
				t.Errorf("status writes = %d, want %d (calls %q)", got, tc.wantWrites, h.callLog())
			}
			if tc.wantRequeue && (requeue <= 0 || requeue > time.Second) {
				t.Errorf("requeue = %v, want within the batch period to flush the counters", requeue)
			}
			if !tc.wantRequeue {
				return
			}
			// After the batch period the deferred counters are written.
			h.reset()
			h.step(time.Second)
			if got := len(h.statusWrites()); got != 1 {
				t.Errorf("after the batch period: %d status writes, want 1", got)
			}
		})
	}
}

// TestWaitingEventOncePerReason checks that a waiting group records an event
// when it starts waiting for a reason, not for every pod that arrives.
func TestWaitingEventOncePerReason(t *testing.T) {
	h := newHarness(t, nil, objects(newGroup(4), pods("p", 1)...)...)
	h.sync()
	wantEvents(t, h.events(), "Normal Waiting has 1 of the 4 active pods it needs")
	h.addPod(newPod("p-1"))
	h.step(2 * time.Second)
	wantEvents(t, h.events())
	h.step(time.Second) // the new count is a refresh: it waits one batch period.
	wantEvents(t, h.events())
	wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, metav1.ConditionFalse, scheduling.ReasonWaitingForPods, "has 2 of the 4 active pods it needs")
}

// TestStaleGateNotPatchedTwice checks that a pod the controller released is
// not patched again while the cache still shows its gate.
func TestStaleGateNotPatchedTwice(t *testing.T) {
	h := newHarness(t, nil, objects(newGroup(2), pods("p", 2)...)...)
	h.sync()
	if got := h.podPatches(); len(got) != 2 {
		t.Fatalf("first sync patched %v, want both pods", got)
	}
	h.reset()
	h.clock.Step(2 * time.Second)
	h.observeGroups() // the pod cache still shows both gates
	h.sync()
	if got := h.podPatches(); len(got) != 0 {
		t.Errorf("second sync from a stale pod cache patched %v, want nothing", got)
	}
	if !h.c.memory.expecting(testKey, gatesRemoved, "uid-p-0") {
		t.Errorf("expectation dropped by a snapshot that still shows the gate")
	}
	h.observe()
	h.sync()
	if h.c.memory.expecting(testKey, gatesRemoved, "uid-p-0") || h.c.memory.expecting(testKey, gatesRemoved, "uid-p-1") {
		t.Errorf("expectations kept after a sync saw the gates gone")
	}
}

// TestExcludedNamespace checks that a PodGroup in a namespace outside the
// selector is left alone, except that its deletion is never blocked.
func TestExcludedNamespace(t *testing.T) {
	exclude := func(c *Config) { c.NamespaceSelector = "kubernetes.io/metadata.name notin (" + testNS + ")" }
	h := newHarness(t, exclude, objects(newGroup(2), pods("p", 2)...)...)
	h.sync()
	if got := h.mutations(); len(got) != 0 {
		t.Errorf("sync in an excluded namespace wrote %v, want nothing", got)
	}
	h = newHarness(t, exclude, objects(newGroup(2, groupDeletedAt(t0), groupFinalizers("scheduling.muster.dev/pod-cleanup")), pods("p", 2)...)...)
	h.sync()
	if got := h.podPatches(); len(got) != 0 {
		t.Errorf("pods patched in an excluded namespace: %v", got)
	}
	if got := h.mutations(); len(got) != 1 || got[0] != "patch podgroups pg" {
		t.Errorf("calls = %q, want only the group's finalizer removed", got)
	}
}

// TestStaleFinalizerNotPatchedTwice checks that a finished pod whose
// finalizer the controller removed is counted, not patched again, when a
// status conflict made the sync start over from a pod cache that still shows
// the finalizer.
func TestStaleFinalizerNotPatchedTwice(t *testing.T) {
	h := newHarness(t, nil, objects(admitted(2), newPod("done", ungated, onNode("n"), succeeded), newPod("busy", ungated, onNode("n"), running))...)
	h.c.memory.expect(testKey, finalizersRemoved, "uid-done") // removed in the API; the cache lags.
	pg := h.group()
	pg.Status.UncountedTerminatedPods = &v1alpha1.UncountedTerminatedPods{Succeeded: uids("done")}
	if _, err := h.muster.SchedulingV1alpha1().PodGroups(testNS).UpdateStatus(t.Context(), pg, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.observeGroups()
	h.reset()
	h.sync()
	if got := h.podPatches(); len(got) != 0 {
		t.Errorf("patched %v, want no pod patched again", got)
	}
	got := h.group()
	if got.Status.Succeeded != 1 || got.Status.UncountedTerminatedPods != nil {
		t.Errorf("succeeded=%d uncounted=%v, want the pod counted once", got.Status.Succeeded, got.Status.UncountedTerminatedPods)
	}
}

// TestDeferredMessageIsWritten checks that a refresh of the Admitted
// message alone, deferred for the batch period, is written once it ends:
// the sync asks to come back, and carries the new message into the write.
// A waiting gang's message changes with nothing else (a node added that
// still leaves it short, a capacity request that gets more room).
func TestDeferredMessageIsWritten(t *testing.T) {
	h := capacityHarness(t, []*corev1.Node{newNode("n1", "4")},
		objects(newGroup(2), pods("p", 2, requests("3"))...)...)
	h.admitRound()
	h.observe()
	first := meta.FindStatusCondition(h.group().Status.Conditions, v1alpha1.ConditionAdmitted)
	if first == nil || first.Reason != scheduling.ReasonExceedsClusterCapacity {
		t.Fatalf("Admitted = %+v, want ExceedsClusterCapacity", first)
	}
	// A second node, too small: the gang still does not fit, for a
	// reason that names two nodes now.
	if err := h.kube.Tracker().Add(newNode("n2", "1")); err != nil {
		t.Fatal(err)
	}
	h.observeNodes()
	h.admission().RunCycle()
	h.reset()
	requeue := h.sync()
	if got := len(h.statusWrites()); got != 0 {
		t.Fatalf("a message alone was written at once (%d writes), within the batch period", got)
	}
	if requeue <= 0 || requeue > time.Second {
		t.Fatalf("requeue = %v, want within the batch period, to write the new message", requeue)
	}
	h.step(time.Second)
	got := meta.FindStatusCondition(h.group().Status.Conditions, v1alpha1.ConditionAdmitted)
	if got == nil || got.Reason != first.Reason || !strings.Contains(got.Message, "2 of 2 nodes") {
		t.Errorf("after the batch period the message is %q, want the new one naming 2 nodes (was %q)", got.Message, first.Message)
	}
}

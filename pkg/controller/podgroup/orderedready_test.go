package podgroup

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

const orderedReadyWeb = "has 1 of the 3 pods it needs, and never will: StatefulSet web has podManagementPolicy OrderedReady (the default), " +
	"so it creates each pod only once the one before it is Ready, while every pod stays gated until 3 exist; " +
	"create the StatefulSet again with podManagementPolicy: Parallel (the field cannot be changed)"

// TestSyncOrderedReadyStatefulSet checks step 6's report of a gang that a
// StatefulSet can never form: only for OrderedReady (set or unset), only
// while the gang is short of pods, and with one Warning event.
func TestSyncOrderedReadyStatefulSet(t *testing.T) {
	web0 := newPod("web-0", ofStatefulSet("web"))
	cases := []struct {
		name       string
		objs       []runtime.Object
		wantReason string
		wantMsg    string
		wantEvents []string
	}{{
		name:       "OrderedReady, minCount 3, one pod: Admitted=False/OrderedReadyStatefulSet and a Warning event that names the StatefulSet, the policy and the fix",
		objs:       []runtime.Object{newGroup(3), newStatefulSet("web", appsv1.OrderedReadyPodManagement), web0},
		wantReason: scheduling.ReasonOrderedReadyStatefulSet,
		wantMsg:    orderedReadyWeb,
		wantEvents: []string{"Warning OrderedReadyStatefulSet " + orderedReadyWeb},
	}, {
		name:       "the policy unset is OrderedReady",
		objs:       []runtime.Object{newGroup(3), newStatefulSet("web", ""), web0},
		wantReason: scheduling.ReasonOrderedReadyStatefulSet,
		wantMsg:    orderedReadyWeb,
		wantEvents: []string{"Warning OrderedReadyStatefulSet " + orderedReadyWeb},
	}, {
		name:       "Parallel: the group only waits for its pods",
		objs:       []runtime.Object{newGroup(3), newStatefulSet("web", appsv1.ParallelPodManagement), web0},
		wantReason: scheduling.ReasonWaitingForPods,
		wantMsg:    "has 1 of the 3 active pods it needs",
		wantEvents: []string{"Normal Waiting has 1 of the 3 active pods it needs"},
	}, {
		name:       "minCount 1: the gang of one forms, OrderedReady or not",
		objs:       []runtime.Object{newGroup(1), newStatefulSet("web", appsv1.OrderedReadyPodManagement), web0},
		wantReason: scheduling.ReasonGangComplete,
		wantEvents: []string{"Normal Admitted 1 of 1 needed pods are present; releasing the gang"},
	}, {
		name: "minCount pods exist already: the gang forms",
		objs: []runtime.Object{newGroup(2), newStatefulSet("web", appsv1.OrderedReadyPodManagement), web0,
			newPod("web-1", ofStatefulSet("web"))},
		wantReason: scheduling.ReasonGangComplete,
		wantEvents: []string{"Normal Admitted 2 of 2 needed pods are present; releasing the gang"},
	}, {
		name:       "a StatefulSet not in the cache (gone, or not seen yet) is not reported",
		objs:       []runtime.Object{newGroup(3), web0},
		wantReason: scheduling.ReasonWaitingForPods,
		wantEvents: []string{"Normal Waiting has 1 of the 3 active pods it needs"},
	}, {
		name:       "pods of no StatefulSet: the group only waits for its pods",
		objs:       []runtime.Object{newGroup(3), newStatefulSet("web", appsv1.OrderedReadyPodManagement), newPod("p-0")},
		wantReason: scheduling.ReasonWaitingForPods,
		wantEvents: []string{"Normal Waiting has 1 of the 3 active pods it needs"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, tc.objs...)
			h.sync()
			status := metav1.ConditionFalse
			if tc.wantReason == scheduling.ReasonGangComplete {
				status = metav1.ConditionTrue
			}
			wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, status, tc.wantReason, tc.wantMsg)
			wantEvents(t, h.events(), tc.wantEvents...)
			// Syncs that change nothing tell nobody again.
			h.step(time.Second)
			h.step(time.Minute)
			wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, status, tc.wantReason, tc.wantMsg)
			wantEvents(t, h.events())
		})
	}
}

// TestOrderedReadyReportFollowsTheStatefulSet checks that the report comes
// when the StatefulSet reaches the cache after its pod, and goes when the
// StatefulSet is gone or the gang is whole.
func TestOrderedReadyReportFollowsTheStatefulSet(t *testing.T) {
	h := newHarness(t, nil, newGroup(2), newPod("web-0", ofStatefulSet("web")))
	h.sync()
	wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, metav1.ConditionFalse, scheduling.ReasonWaitingForPods, "")
	h.queued()

	if err := h.kube.Tracker().Add(newStatefulSet("web", "")); err != nil {
		t.Fatal(err)
	}
	h.observe()
	if got := h.queued(); len(got) != 1 || got[0] != testKey.String() {
		t.Errorf("queued %v when the StatefulSet arrived, want [%s]", got, testKey)
	}
	h.step(0)
	wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, metav1.ConditionFalse, scheduling.ReasonOrderedReadyStatefulSet, "")
	if ev := h.events(); len(ev) != 1 {
		t.Errorf("events = %q, want one warning", ev)
	}

	if err := h.kube.Tracker().Delete(statefulSetsGVR, testNS, "web"); err != nil {
		t.Fatal(err)
	}
	h.step(0)
	wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, metav1.ConditionFalse, scheduling.ReasonWaitingForPods, "")

	h.addPod(newPod("web-1", ofStatefulSet("web")))
	h.step(0)
	wantCondition(t, h.group(), v1alpha1.ConditionAdmitted, metav1.ConditionTrue, scheduling.ReasonGangComplete, "")
}

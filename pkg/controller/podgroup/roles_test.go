package podgroup

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func inRole(role string) podMod {
	return func(p *corev1.Pod) { p.Labels[scheduling.RoleLabel] = role }
}

// withRoles gives the group spec.roles; the gang's minCount must be their sum.
func withRoles(roles ...v1alpha1.PodGroupRole) groupMod {
	return func(pg *v1alpha1.PodGroup) { pg.Spec.Roles = roles }
}

func wantRoleStatus(t *testing.T, pg *v1alpha1.PodGroup, want ...v1alpha1.PodGroupRoleStatus) {
	t.Helper()
	if len(pg.Status.Roles) != len(want) {
		t.Fatalf("status.roles = %+v, want %+v", pg.Status.Roles, want)
	}
	for i, w := range want {
		g := pg.Status.Roles[i]
		if g.Name != w.Name || g.Active != w.Active || g.Succeeded != w.Succeeded || g.Failed != w.Failed || g.UncountedTerminatedPods != nil {
			t.Errorf("status.roles[%d] = %+v, want %+v with nothing uncounted", i, g, w)
		}
	}
}

// TestSyncRolesCompleteness: a gang with roles is admitted only when every
// role has its count of active pods, however many pods it has in total.
func TestSyncRolesCompleteness(t *testing.T) {
	spark := withRoles(v1alpha1.PodGroupRole{Name: "driver", Count: 1}, v1alpha1.PodGroupRole{Name: "worker", Count: 2})
	cases := []struct {
		name        string
		pods        []*corev1.Pod
		wantReason  string
		wantMessage string
		wantRoles   []v1alpha1.PodGroupRoleStatus
	}{
		{"three workers and no driver are not a complete gang",
			[]*corev1.Pod{newPod("w-0", inRole("worker")), newPod("w-1", inRole("worker")), newPod("w-2", inRole("worker"))},
			scheduling.ReasonWaitingForPods, "roles lack active pods: driver has 0 of 1",
			[]v1alpha1.PodGroupRoleStatus{{Name: "driver"}, {Name: "worker", Active: 3}}},
		{"a pod of no role does not stand in for a missing worker",
			[]*corev1.Pod{newPod("d", inRole("driver")), newPod("w-0", inRole("worker")), newPod("x")},
			scheduling.ReasonWaitingForPods, "roles lack active pods: worker has 1 of 2",
			[]v1alpha1.PodGroupRoleStatus{{Name: "driver", Active: 1}, {Name: "worker", Active: 1}}},
		{"a finished worker is not active",
			[]*corev1.Pod{newPod("d", inRole("driver")), newPod("w-0", inRole("worker")), newPod("w-1", inRole("worker"), failed)},
			scheduling.ReasonWaitingForPods, "has 2 of the 3 active pods it needs; roles lack active pods: worker has 1 of 2",
			[]v1alpha1.PodGroupRoleStatus{{Name: "driver", Active: 1}, {Name: "worker", Active: 1, Failed: 1}}},
		{"a driver and two workers are complete",
			[]*corev1.Pod{newPod("d", inRole("driver")), newPod("w-0", inRole("worker")), newPod("w-1", inRole("worker"))},
			scheduling.ReasonGangComplete, "",
			[]v1alpha1.PodGroupRoleStatus{{Name: "driver", Active: 1}, {Name: "worker", Active: 2}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Completeness, not batching: every change is written at once.
			h := newHarness(t, func(c *Config) { c.StatusBatchPeriod = 0 }, objects(newGroup(3, spark), tc.pods...)...)
			h.sync()
			pg := h.group()
			status := metav1.ConditionFalse
			if tc.wantReason == scheduling.ReasonGangComplete {
				status = metav1.ConditionTrue
			}
			wantCondition(t, pg, v1alpha1.ConditionAdmitted, status, tc.wantReason, tc.wantMessage)
			wantRoleStatus(t, pg, tc.wantRoles...)
		})
	}
}

// TestSyncRolesCountedExactlyOnce crashes the controller at every point of
// the accounting of a gang with roles, deletes every pod whose finalizer
// came off before a new controller starts, and checks that each role's
// counts are exact: a pod counted after it is gone is counted in its role.
func TestSyncRolesCountedExactlyOnce(t *testing.T) {
	spark := withRoles(v1alpha1.PodGroupRole{Name: "driver", Count: 1}, v1alpha1.PodGroupRole{Name: "worker", Count: 4})
	start := func() []runtime.Object {
		ps := []*corev1.Pod{newPod("driver", inRole("driver"), succeeded)}
		for i := range 4 {
			mod := succeeded
			if i%2 == 0 {
				mod = failed
			}
			ps = append(ps, newPod(fmt.Sprintf("w-%d", i), inRole("worker"), mod))
		}
		return objects(admitted(5, spark), ps...)
	}
	forEachCrashPoint(t, start, func(t *testing.T, h *harness) {
		// The kubelet deletes a finished pod once nothing holds it.
		var left []runtime.Object
		for _, o := range h.snapshot() {
			if p, ok := o.(*corev1.Pod); ok && !scheduling.HasTrackingFinalizer(p) {
				continue
			}
			left = append(left, o)
		}
		after := newHarness(t, nil, left...)
		after.sync()
		after.step(time.Minute)
		pg := after.group()
		wantCounts(t, pg, 3, 2)
		wantUncounted(t, pg, nil, nil)
		wantRoleStatus(t, pg, v1alpha1.PodGroupRoleStatus{Name: "driver", Succeeded: 1}, v1alpha1.PodGroupRoleStatus{Name: "worker", Succeeded: 2, Failed: 2})
	})
}

// TestSyncRoleMismatch: pods of an existing group whose role label or role
// annotations disagree with spec.roles get an event each, and the group a
// RoleMismatch condition; it goes back to False once they agree.
func TestSyncRoleMismatch(t *testing.T) {
	spark := withRoles(v1alpha1.PodGroupRole{Name: "driver", Count: 1}, v1alpha1.PodGroupRole{Name: "worker", Count: 2})
	cases := []struct {
		name      string
		group     *v1alpha1.PodGroup
		pods      []*corev1.Pod
		wantCond  metav1.ConditionStatus // "" for no condition
		wantEvent string                 // prefix of the one RolesMismatch event, if any
	}{
		{"pods that agree leave no condition", newGroup(3, spark),
			[]*corev1.Pod{newPod("d", inRole("driver"), annotated(scheduling.RolesAnnotation, "2")), newPod("w", inRole("worker"), annotated(scheduling.RoleCountAnnotation, "2"))}, "", ""},
		{"a role the spec does not have", newGroup(3, spark),
			[]*corev1.Pod{newPod("d", inRole("driver")), newPod("x", inRole("ps"))}, metav1.ConditionTrue,
			`Warning RolesMismatch disagrees with PodGroup pg: label scheduling.muster.dev/role="ps" names no role of spec.roles`},
		{"a pod without a role", newGroup(3, spark),
			[]*corev1.Pod{newPod("x")}, metav1.ConditionTrue,
			`Warning RolesMismatch disagrees with PodGroup pg: label scheduling.muster.dev/role="" names no role of spec.roles`},
		{"a different number of roles", newGroup(3, spark),
			[]*corev1.Pod{newPod("d", inRole("driver"), annotated(scheduling.RolesAnnotation, "3"))}, metav1.ConditionTrue,
			`Warning RolesMismatch disagrees with PodGroup pg: annotation scheduling.muster.dev/roles="3", but spec.roles has 2 roles`},
		{"a different role count", newGroup(3, spark),
			[]*corev1.Pod{newPod("w", inRole("worker"), annotated(scheduling.RoleCountAnnotation, "5"))}, metav1.ConditionTrue,
			`Warning RolesMismatch disagrees with PodGroup pg: annotation scheduling.muster.dev/role-count="5", but role worker has count 2`},
		{"roles announced to a group without roles", newGroup(1),
			[]*corev1.Pod{newPod("d", inRole("driver"), annotated(scheduling.RolesAnnotation, "2"))}, metav1.ConditionTrue,
			`Warning RolesMismatch disagrees with PodGroup pg: annotation scheduling.muster.dev/roles is set, but the group has no spec.roles`},
		{"the condition goes back to False once the pods agree",
			newGroup(3, spark, condition(v1alpha1.ConditionRoleMismatch, metav1.ConditionTrue, scheduling.ReasonPodsDisagree, t0.Add(-time.Minute))),
			[]*corev1.Pod{newPod("d", inRole("driver"))}, metav1.ConditionFalse, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, objects(tc.group, tc.pods...)...)
			h.sync()
			pg := h.group()
			switch tc.wantCond {
			case "":
				wantNoCondition(t, pg, v1alpha1.ConditionRoleMismatch)
			case metav1.ConditionTrue:
				wantCondition(t, pg, v1alpha1.ConditionRoleMismatch, metav1.ConditionTrue, scheduling.ReasonPodsDisagree, "")
			default:
				wantCondition(t, pg, v1alpha1.ConditionRoleMismatch, metav1.ConditionFalse, scheduling.ReasonPodsAgree, "")
			}
			var mismatches []string
			for _, e := range h.events() {
				if strings.HasPrefix(e, "Warning RolesMismatch") {
					mismatches = append(mismatches, e)
				}
			}
			switch {
			case tc.wantEvent == "" && len(mismatches) > 0:
				t.Errorf("events %q, want no RolesMismatch", mismatches)
			case tc.wantEvent != "" && (len(mismatches) != 1 || !strings.HasPrefix(mismatches[0], tc.wantEvent)):
				t.Errorf("RolesMismatch events %q, want one starting %q", mismatches, tc.wantEvent)
			}
		})
	}
}

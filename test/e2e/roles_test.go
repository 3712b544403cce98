package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// rolePod is a pool pod of group in role, requesting cpu.
func rolePod(ns, name, group, role, cpu, runFor string, ann map[string]string) *corev1.Pod {
	p := poolPod(ns, name, group, cpu, runFor)
	p.Labels[scheduling.RoleLabel] = role
	for k, v := range ann {
		p.Annotations[k] = v
	}
	return p
}

// TestRolesGangReleasedWhenEveryRoleIsComplete (issue 11, e2e 1): a
// 1-driver + 4-worker gang with different requests per role is released
// only when both roles are complete, and then whole, each pod placed by its
// own requests. Five workers and no driver are not a complete gang.
func TestRolesGangReleasedWhenEveryRoleIsComplete(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	poolNodes(t, ctx, ns, 3, "8", nil)
	pg := newGroupObject(ns, "spark", 5)
	pg.Spec.Roles = []v1alpha1.PodGroupRole{{Name: "driver", Count: 1}, {Name: "worker", Count: 4}}
	if _, err := muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create group: %v", err)
	}
	var workers []*corev1.Pod
	for i := range 5 {
		workers = append(workers, rolePod(ns, fmt.Sprintf("worker-%d", i), "spark", "worker", "3", "20s", nil))
	}
	createPods(t, ctx, workers)
	got := waitAdmitted(t, ctx, ns, "spark", metav1.ConditionFalse, "WaitingForPods")
	waitFor(t, ctx, "the group to say which role is short", func(ctx context.Context) (bool, error) {
		var err error
		if got, err = getGroup(ctx, ns, "spark"); err != nil {
			return false, nil
		}
		return strings.Contains(admittedCondition(got).Message, "driver has 0 of 1"), nil
	})
	for _, p := range listPods(t, ctx, ns) {
		if !isGated(&p) {
			t.Fatalf("pod %s was released before the driver exists", p.Name)
		}
	}

	createPod(t, ctx, rolePod(ns, "driver", "spark", "driver", "1", "20s", nil))
	waitAdmitted(t, ctx, ns, "spark", metav1.ConditionTrue, "")
	bound := waitBound(t, ctx, ns, "spark", 6)
	expectPinnedWhereBound(t, bound)
	waitFor(t, ctx, "status.roles to count the active pods", func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, ns, "spark")
		if err != nil || len(pg.Status.Roles) != 2 {
			return false, nil
		}
		return pg.Status.Roles[0].Active == 1 && pg.Status.Roles[1].Active == 5, nil
	})
}

// TestRolesDisagreeingAnnotations (issue 11, e2e 4): pods whose role
// annotations disagree get a RolesMismatch event, and no group is created.
func TestRolesDisagreeingAnnotations(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	createPod(t, ctx, newPod(ns, "driver", podOpts{group: "mixed", labels: map[string]string{scheduling.RoleLabel: "driver"},
		annotations: map[string]string{scheduling.RolesAnnotation: "2"}}))
	createPod(t, ctx, newPod(ns, "worker", podOpts{group: "mixed", labels: map[string]string{scheduling.RoleLabel: "worker"},
		annotations: map[string]string{scheduling.RolesAnnotation: "3", scheduling.RoleCountAnnotation: "2"}}))
	var msg string
	waitFor(t, ctx, "a RolesMismatch event on a pod", func(ctx context.Context) (bool, error) {
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=RolesMismatch"})
		if err != nil || len(events.Items) == 0 {
			return false, nil
		}
		e := events.Items[0]
		msg = e.Message
		return e.InvolvedObject.Kind == "Pod", nil
	})
	if !strings.Contains(msg, "scheduling.muster.dev/roles is") {
		t.Errorf("event message %q does not say which annotation disagrees", msg)
	}
	if _, err := getGroup(ctx, ns, "mixed"); !isNotFound(err) {
		t.Errorf("get PodGroup mixed: %v, want NotFound: no group is created from disagreeing pods", err)
	}
	for _, p := range listPods(t, ctx, ns) {
		if !isGated(&p) {
			t.Errorf("pod %s was released without a group", p.Name)
		}
	}
}

// TestRolesCountsExactAfterDeletion (issue 11, e2e 5): pods that create
// their group by the roles annotations run and end; once all are deleted,
// each role's counts are exact.
func TestRolesCountsExactAfterDeletion(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	roles := func(count string) map[string]string {
		return map[string]string{scheduling.RolesAnnotation: "2", scheduling.RoleCountAnnotation: count}
	}
	createPod(t, ctx, newPod(ns, "driver", podOpts{group: "etl", runFor: "2s", labels: map[string]string{scheduling.RoleLabel: "driver"}, annotations: roles("1")}))
	for i := range 3 {
		o := podOpts{group: "etl", runFor: "2s", labels: map[string]string{scheduling.RoleLabel: "executor"}, annotations: roles("3")}
		if i == 0 {
			o.exitCode = 1
		}
		createPod(t, ctx, newPod(ns, fmt.Sprintf("exec-%d", i), o))
	}
	pg := waitGroupFinished(t, ctx, ns, "etl")
	if len(pg.Spec.Roles) != 2 || pg.Spec.SchedulingPolicy.Gang == nil || pg.Spec.SchedulingPolicy.Gang.MinCount != 4 {
		t.Fatalf("created spec = %+v, want roles driver and executor and a gang of 4", pg.Spec)
	}
	deleteAllPods(t, ctx, ns, time.Minute)
	pg, err := getGroup(ctx, ns, "etl")
	if err != nil {
		t.Fatal(err)
	}
	want := []v1alpha1.PodGroupRoleStatus{{Name: "driver", Succeeded: 1}, {Name: "executor", Succeeded: 2, Failed: 1}}
	if len(pg.Status.Roles) != 2 {
		t.Fatalf("status.roles = %+v, want %+v", pg.Status.Roles, want)
	}
	for i, w := range want {
		if g := pg.Status.Roles[i]; g.Name != w.Name || g.Active != 0 || g.Succeeded != w.Succeeded || g.Failed != w.Failed || g.UncountedTerminatedPods != nil {
			t.Errorf("status.roles[%d] = %+v, want %+v", i, g, w)
		}
	}
	if pg.Status.Succeeded != 3 || pg.Status.Failed != 1 {
		t.Errorf("group succeeded/failed = %d/%d, want 3/1", pg.Status.Succeeded, pg.Status.Failed)
	}
}

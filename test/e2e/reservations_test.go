package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// sparkGroup is a driver of 1 cpu and workers the driver creates later, of
// workerCPU each, on the test's pool nodes.
func sparkGroup(ns, name string, workers int32, workerCPU string, timeoutSeconds *int32) *v1alpha1.PodGroup {
	pg := newGroupObject(ns, name, workers+1)
	pg.Spec.Roles = []v1alpha1.PodGroupRole{
		{Name: "driver", Count: 1},
		{Name: "worker", Count: workers, CreatedLater: true, ReservationTimeoutSeconds: timeoutSeconds, Template: &v1alpha1.PodGroupRoleTemplate{
			Requests:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(workerCPU)},
			NodeSelector: map[string]string{poolKey: ns},
			Tolerations:  []corev1.Toleration{{Key: poolKey, Operator: corev1.TolerationOpEqual, Value: ns, Effect: corev1.TaintEffectNoSchedule}},
		}},
	}
	return pg
}

func createGroupObject(t *testing.T, ctx context.Context, pg *v1alpha1.PodGroup) {
	t.Helper()
	if _, err := muster.SchedulingV1alpha1().PodGroups(pg.Namespace).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PodGroup %s: %v", pg.Name, err)
	}
}

// reservedOn is how many places status.reservations holds on each node.
func reservedOn(pg *v1alpha1.PodGroup) (map[string]int, int) {
	out, total := map[string]int{}, 0
	for _, r := range pg.Status.Reservations {
		out[r.Node] += int(r.Count)
		total += int(r.Count)
	}
	return out, total
}

func waitCapacityReserved(t *testing.T, ctx context.Context, ns, name string, status metav1.ConditionStatus, reason string) *v1alpha1.PodGroup {
	t.Helper()
	return waitCondition(t, ctx, ns, name, v1alpha1.ConditionCapacityReserved, status, reason)
}

// TestRolesDriverCreatesWorkers (issue 11, e2e 2): a Spark-style gang, in
// order: only the driver exists, and creates its group from its
// roles-template annotation, with a template for 8 workers that cannot
// fit, so the driver stays gated and the group says why; capacity is freed,
// so the driver is released and capacity reserved for the workers; the
// driver's 8 workers are created, and each is pinned inside the reservation
// and released, none left waiting.
func TestRolesDriverCreatesWorkers(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	poolNodes(t, ctx, ns, 4, "8", nil)
	// A gang that leaves 2 cpu free on each node: room for the driver, none
	// for a worker of 3.
	createGang(t, ctx, ns, "hog", 4, "6", "10m")
	waitBound(t, ctx, ns, "hog", 4)

	// The driver alone creates its group, from the workers' template in its
	// roles-template annotation, as a framework that only creates pods does.
	template, err := json.Marshal(sparkGroup(ns, "spark", 8, "3", nil).Spec.Roles[1:])
	if err != nil {
		t.Fatal(err)
	}
	createPod(t, ctx, rolePod(ns, "driver", "spark", "driver", "1", "10m", map[string]string{scheduling.RolesTemplateAnnotation: string(template)}))
	pg := waitAdmitted(t, ctx, ns, "spark", metav1.ConditionFalse, scheduling.ReasonInsufficientCapacity)
	if n := len(pg.Spec.Roles); n != 2 || !pg.Spec.Roles[1].CreatedLater || pg.Spec.SchedulingPolicy.Gang.MinCount != 9 {
		t.Errorf("group created from the driver: roles %+v, minCount %d; want driver and 8 workers created later, minCount 9", pg.Spec.Roles, pg.Spec.SchedulingPolicy.Gang.MinCount)
	}
	if msg := admittedCondition(pg).Message; !strings.Contains(msg, "8 pods requesting cpu 3 each") {
		t.Errorf("Admitted message %q does not say that the workers do not fit", msg)
	}
	if len(pg.Status.Reservations) != 0 {
		t.Errorf("reservations %v while the gang waits, want none", pg.Status.Reservations)
	}
	for _, p := range groupPods(t, ctx, ns, "spark") {
		if !isGated(&p) {
			t.Fatalf("driver released although its workers do not fit")
		}
	}

	// Free the capacity: the driver is released, and 8 places reserved.
	if err := kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: scheduling.PodGroupLabel + "=hog"}); err != nil {
		t.Fatalf("deleting the hog gang: %v", err)
	}
	waitAdmitted(t, ctx, ns, "spark", metav1.ConditionTrue, "")
	pg = waitCapacityReserved(t, ctx, ns, "spark", metav1.ConditionTrue, "AwaitingPods")
	reserved, total := reservedOn(pg)
	if total != 8 {
		t.Fatalf("status.reservations %v hold %d places, want 8", pg.Status.Reservations, total)
	}
	waitBound(t, ctx, ns, "spark", 1)

	// The driver creates its workers: each takes a reserved place.
	var workers []*corev1.Pod
	for i := range 8 {
		workers = append(workers, rolePod(ns, fmt.Sprintf("worker-%d", i), "spark", "worker", "3", "10m", nil))
	}
	createPods(t, ctx, workers)
	bound := waitBound(t, ctx, ns, "spark", 9)
	expectPinnedWhereBound(t, bound)
	used := map[string]int{}
	for _, p := range bound {
		if p.Labels[scheduling.RoleLabel] == "worker" {
			used[scheduling.PinnedNode(&p)]++
		}
	}
	for node, n := range used {
		if n > reserved[node] {
			t.Errorf("%d workers pinned to %s, where %d places were reserved (reservations %v)", n, node, reserved[node], reserved)
		}
	}
	waitCapacityReserved(t, ctx, ns, "spark", metav1.ConditionFalse, "AllClaimed")
	// The counts follow the pods in a later status write: the write that
	// claims the last place is made before its pod is released.
	waitFor(t, ctx, "no reservation and no gated pod left once every worker arrived", func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, ns, "spark")
		return err == nil && len(pg.Status.Reservations) == 0 && pg.Status.Gated == 0, nil
	})
}

// TestRolesWorkersNeverArrive (issue 11, e2e 3): a Spark-style gang whose
// workers never arrive gives its reservation back after the role's timeout,
// and another waiting gang is admitted into it.
func TestRolesWorkersNeverArrive(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	poolNodes(t, ctx, ns, 2, "8", nil)
	timeout := int32(10)
	createGroupObject(t, ctx, sparkGroup(ns, "spark", 4, "3", &timeout))
	createPod(t, ctx, rolePod(ns, "driver", "spark", "driver", "1", "10m", nil))
	pg := waitCapacityReserved(t, ctx, ns, "spark", metav1.ConditionTrue, "AwaitingPods")
	admittedAt := pg.Status.AdmissionTime.Time

	// 1 + 4×3 of 16 cpu are taken: a gang of 2×3 waits.
	createGang(t, ctx, ns, "next", 2, "3", "10m")
	waitAdmitted(t, ctx, ns, "next", metav1.ConditionFalse, scheduling.ReasonInsufficientCapacity)

	pg = waitCapacityReserved(t, ctx, ns, "spark", metav1.ConditionFalse, "ReservationExpired")
	c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionCapacityReserved)
	if !strings.Contains(c.Message, "4 of the 4 pods of role worker did not arrive within 10s") {
		t.Errorf("CapacityReserved message %q does not say what expired", c.Message)
	}
	if after := c.LastTransitionTime.Sub(admittedAt); after < 10*time.Second {
		t.Errorf("reservation given back %s after admission, before the 10s timeout", after)
	}
	if len(pg.Status.Reservations) != 0 {
		t.Errorf("reservations %v after the timeout, want none", pg.Status.Reservations)
	}
	waitAdmitted(t, ctx, ns, "next", metav1.ConditionTrue, "")
	expectPinnedWhereBound(t, waitBound(t, ctx, ns, "next", 2))
	waitFor(t, ctx, "a ReservationExpired event on the group", func(ctx context.Context) (bool, error) {
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=ReservationExpired"})
		return err == nil && len(events.Items) > 0 && events.Items[0].InvolvedObject.Name == "spark", nil
	})
}

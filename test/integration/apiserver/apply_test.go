package apiserver

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	ac "github.com/muster-dev/muster/pkg/generated/applyconfiguration/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/integration/framework"
)

// TestServerSideApply checks that apply records each manager's fields, that
// status applied through /status is owned separately, and that a second
// manager conflicts on a field it does not own.
func TestServerSideApply(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	pgs := s.Client.SchedulingV1alpha1().PodGroups(ns)

	spec := ac.PodGroup("applied", ns).WithSpec(ac.PodGroupSpec().
		WithSchedulingPolicy(ac.PodGroupSchedulingPolicy().WithGang(ac.GangSchedulingPolicy().WithMinCount(3))).
		WithSchedulingGates(ac.PodGroupSchedulingGate().WithName("example.com/approval")))
	pg, err := pgs.Apply(ctx, spec, metav1.ApplyOptions{FieldManager: "trainer"})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if pg.Spec.SchedulingPolicy.Gang == nil || pg.Spec.SchedulingPolicy.Gang.MinCount != 3 || len(pg.Spec.SchedulingGates) != 1 {
		t.Fatalf("applied spec = %+v", pg.Spec)
	}
	if m := managerOf(pg, "trainer", ""); m == nil || m.Operation != metav1.ManagedFieldsOperationApply {
		t.Fatalf("managedFields = %+v, want an Apply entry for trainer", pg.ManagedFields)
	}

	status := ac.PodGroup("applied", ns).WithStatus(ac.PodGroupStatus().WithPods(3).WithGated(3).WithActive(3))
	pg, err = pgs.ApplyStatus(ctx, status, metav1.ApplyOptions{FieldManager: "muster-controller"})
	if err != nil {
		t.Fatalf("apply status: %v", err)
	}
	if pg.Status.Pods != 3 || pg.Status.Gated != 3 {
		t.Errorf("applied status = %+v", pg.Status)
	}
	if m := managerOf(pg, "muster-controller", "status"); m == nil {
		t.Fatalf("managedFields = %+v, want a status entry for muster-controller", pg.ManagedFields)
	}
	if pg.Spec.SchedulingPolicy.Gang.MinCount != 3 {
		t.Errorf("status apply changed spec")
	}

	// Another manager setting minCount conflicts with trainer; forcing wins.
	other := ac.PodGroup("applied", ns).WithSpec(ac.PodGroupSpec().
		WithSchedulingPolicy(ac.PodGroupSchedulingPolicy().WithGang(ac.GangSchedulingPolicy().WithMinCount(5))))
	_, err = pgs.Apply(ctx, other, metav1.ApplyOptions{FieldManager: "scaler"})
	if !apierrors.IsConflict(err) {
		t.Fatalf("apply by a second manager: %v, want 409 Conflict", err)
	}
	pg, err = pgs.Apply(ctx, other, metav1.ApplyOptions{FieldManager: "scaler", Force: true})
	if err != nil || pg.Spec.SchedulingPolicy.Gang.MinCount != 5 {
		t.Fatalf("forced apply: %v", err)
	}

	// Apply that drops the gate removes it: the trainer no longer owns it.
	trimmed := ac.PodGroup("applied", ns).WithSpec(ac.PodGroupSpec().
		WithSchedulingPolicy(ac.PodGroupSchedulingPolicy().WithGang(ac.GangSchedulingPolicy().WithMinCount(5))))
	pg, err = pgs.Apply(ctx, trimmed, metav1.ApplyOptions{FieldManager: "trainer", Force: true})
	if err != nil {
		t.Fatalf("apply without gate: %v", err)
	}
	if len(pg.Spec.SchedulingGates) != 0 || pg.Status.Phase != v1alpha1.PodGroupPending {
		t.Errorf("gates=%v phase=%q, want none and Pending", pg.Spec.SchedulingGates, pg.Status.Phase)
	}
}

func managerOf(pg *v1alpha1.PodGroup, manager, subresource string) *metav1.ManagedFieldsEntry {
	for i, m := range pg.ManagedFields {
		if m.Manager == manager && m.Subresource == subresource {
			return &pg.ManagedFields[i]
		}
	}
	return nil
}

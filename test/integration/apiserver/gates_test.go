package apiserver

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/integration/framework"
)

// TestSchedulingGateRules checks the KEP-3521 rules on group gates through
// the API: set at creation, then only removed, in any order.
func TestSchedulingGateRules(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	pgs := s.Client.SchedulingV1alpha1().PodGroups(ns)

	created, err := pgs.Create(ctx, gangGroup("gated", 2, "example.com/a", "example.com/b", "example.com/c"), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.Status.Phase != v1alpha1.PodGroupGated {
		t.Errorf("phase = %q, want Gated", created.Status.Phase)
	}

	rejected := []struct {
		name  string
		patch string
		field string
	}{
		{"adding a gate", `{"spec":{"schedulingGates":[{"name":"example.com/a"},{"name":"example.com/b"},{"name":"example.com/c"},{"name":"example.com/d"}]}}`, "spec.schedulingGates[3]"},
		{"renaming a gate", `{"spec":{"schedulingGates":[{"name":"example.com/a"},{"name":"example.com/renamed"},{"name":"example.com/c"}]}}`, "spec.schedulingGates[1]"},
		{"a duplicate gate", `{"spec":{"schedulingGates":[{"name":"example.com/a"},{"name":"example.com/a"}]}}`, "spec.schedulingGates[1].name"},
		{"an invalid gate name", `{"spec":{"schedulingGates":[{"name":"not a name"}]}}`, "spec.schedulingGates[0].name"},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pgs.Patch(ctx, "gated", types.MergePatchType, []byte(tc.patch), metav1.PatchOptions{})
			expectInvalid(t, err, tc.field)
		})
	}

	// Removing the middle gate, then the last, then the first: any order.
	for _, remaining := range [][]string{{"example.com/a", "example.com/c"}, {"example.com/a"}, {}} {
		pg, err := pgs.Get(ctx, "gated", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		pg.Spec.SchedulingGates = nil
		for _, g := range remaining {
			pg.Spec.SchedulingGates = append(pg.Spec.SchedulingGates, v1alpha1.PodGroupSchedulingGate{Name: g})
		}
		if _, err := pgs.Update(ctx, pg, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("removing gates down to %v: %v", remaining, err)
		}
	}
	pg, err := pgs.Get(ctx, "gated", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if len(pg.Spec.SchedulingGates) != 0 || pg.Status.Phase != v1alpha1.PodGroupPending {
		t.Errorf("after removing all gates: gates=%v phase=%q, want none and Pending", pg.Spec.SchedulingGates, pg.Status.Phase)
	}
	if pg.Generation != 4 {
		t.Errorf("generation = %d, want 4 (one bump per removal)", pg.Generation)
	}

	// A removed gate cannot come back.
	_, err = pgs.Patch(ctx, "gated", types.MergePatchType, []byte(`{"spec":{"schedulingGates":[{"name":"example.com/b"}]}}`), metav1.PatchOptions{})
	expectInvalid(t, err, "spec.schedulingGates[0]")
}

// TestMinCountChanges checks that gang.minCount can scale but stays >= 1,
// and that a group cannot switch between basic and gang.
func TestMinCountChanges(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	pgs := s.Client.SchedulingV1alpha1().PodGroups(ns)
	if _, err := pgs.Create(ctx, gangGroup("scale", 4), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	for _, n := range []int32{8, 2} {
		pg, err := pgs.Patch(ctx, "scale", types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"schedulingPolicy":{"gang":{"minCount":%d}}}}`, n)), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("setting minCount to %d: %v", n, err)
		}
		if pg.Spec.SchedulingPolicy.Gang.MinCount != n {
			t.Errorf("minCount = %d, want %d", pg.Spec.SchedulingPolicy.Gang.MinCount, n)
		}
	}
	_, err := pgs.Patch(ctx, "scale", types.MergePatchType, []byte(`{"spec":{"schedulingPolicy":{"gang":{"minCount":0}}}}`), metav1.PatchOptions{})
	expectInvalid(t, err, "spec.schedulingPolicy.gang.minCount")
	_, err = pgs.Patch(ctx, "scale", types.MergePatchType, []byte(`{"spec":{"schedulingPolicy":{"gang":null,"basic":{}}}}`), metav1.PatchOptions{})
	expectInvalid(t, err, "spec.schedulingPolicy")
}

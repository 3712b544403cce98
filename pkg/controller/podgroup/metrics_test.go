package podgroup

import (
	"testing"

	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/testutil"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// TestGatedPodsGauge checks that the gauge is the sum over groups, kept
// exact as a group changes phase and goes away.
func TestGatedPodsGauge(t *testing.T) {
	metrics := newControllerMetrics()
	if err := metrics.register(k8smetrics.NewKubeRegistry()); err != nil {
		t.Fatal(err)
	}
	gauge := func(phase v1alpha1.PodGroupPhase) float64 {
		t.Helper()
		v, err := testutil.GetGaugeMetricValue(metrics.gatedPods.WithLabelValues(string(phase)))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	group := func(phase v1alpha1.PodGroupPhase, gated int32) *v1alpha1.PodGroup {
		pg := newGroup(1)
		pg.Status.Phase, pg.Status.Gated = phase, gated
		return pg
	}
	pending0, admitted0 := gauge(v1alpha1.PodGroupPending), gauge(v1alpha1.PodGroupAdmitted)
	steps := []struct {
		name              string
		do                func()
		pending, admitted float64
	}{
		{name: "a pending group adds its gated pods", do: func() { metrics.observeGroup(gk("gauge/a"), group(v1alpha1.PodGroupPending, 3)) }, pending: 3},
		{name: "a second group adds to the sum", do: func() { metrics.observeGroup(gk("gauge/b"), group(v1alpha1.PodGroupPending, 2)) }, pending: 5},
		{name: "a group seen again is not added twice", do: func() { metrics.observeGroup(gk("gauge/a"), group(v1alpha1.PodGroupPending, 3)) }, pending: 5},
		{name: "a group that changes phase moves its pods", do: func() { metrics.observeGroup(gk("gauge/a"), group(v1alpha1.PodGroupAdmitted, 1)) }, pending: 2, admitted: 1},
		{name: "a deleted group leaves the sum", do: func() { metrics.forgetGroup(gk("gauge/b")) }, admitted: 1},
		{name: "a group without a phase yet is not counted", do: func() { metrics.observeGroup(gk("gauge/a"), group("", 4)) }},
		{name: "forgetting an unknown group changes nothing", do: func() { metrics.forgetGroup(gk("gauge/none")) }},
	}
	for _, s := range steps {
		s.do()
		if got := gauge(v1alpha1.PodGroupPending) - pending0; got != s.pending {
			t.Errorf("%s: pending gauge moved by %v, want %v", s.name, got, s.pending)
		}
		if got := gauge(v1alpha1.PodGroupAdmitted) - admitted0; got != s.admitted {
			t.Errorf("%s: admitted gauge moved by %v, want %v", s.name, got, s.admitted)
		}
	}
}

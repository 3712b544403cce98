package fuzzer

import (
	"math/rand"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/validation"
)

// TestPoliciesAreValidUnions fills many objects and expects every policy,
// of a PodGroup and of each Workload template, to set exactly one member
// and a gang of at least one pod.
func TestPoliciesAreValidUnions(t *testing.T) {
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, Funcs), rand.NewSource(1), runtimeserializer.NewCodecFactory(runtime.NewScheme()))
	check := func(what string, p *scheduling.PodGroupSchedulingPolicy) {
		t.Helper()
		if (p.Basic == nil) == (p.Gang == nil) {
			t.Fatalf("%s: want exactly one member, got basic=%v gang=%v", what, p.Basic, p.Gang)
		}
		if p.Gang != nil && p.Gang.MinCount < 1 {
			t.Fatalf("%s: gang.minCount = %d, want >= 1", what, p.Gang.MinCount)
		}
	}
	var basic, gang int
	for i := 0; i < 200; i++ {
		pg := &scheduling.PodGroup{}
		f.Fill(pg)
		check("podgroup", &pg.Spec.SchedulingPolicy)
		if pg.Spec.SchedulingPolicy.Gang != nil {
			gang++
		} else {
			basic++
		}
		w := &scheduling.Workload{}
		f.Fill(w)
		for j := range w.Spec.PodGroupTemplates {
			check("workload template", &w.Spec.PodGroupTemplates[j].SchedulingPolicy)
		}
	}
	if basic == 0 || gang == 0 {
		t.Errorf("both members must be filled: basic=%d gang=%d", basic, gang)
	}
}

// TestSchedulingConstraintsAreFilled fills many objects and expects the
// topology fields to be filled, so that the round trip covers them, and
// every schedulingConstraints filled to be valid.
func TestSchedulingConstraintsAreFilled(t *testing.T) {
	f := fuzzer.FuzzerFor(fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, Funcs), rand.NewSource(1), runtimeserializer.NewCodecFactory(runtime.NewScheme()))
	seen := map[string]int{}
	check := func(what string, c *scheduling.PodGroupSchedulingConstraints, path *field.Path) {
		t.Helper()
		if c == nil {
			return
		}
		seen[what]++
		if len(c.Topology) > 0 {
			seen["topology"]++
		}
		if len(c.PreferredTopology) > 0 {
			seen["preferredTopology"]++
		}
		if c.Slice != nil {
			seen["slice"]++
		}
		if errs := validation.ValidateSchedulingConstraints(c, path); len(errs) > 0 {
			t.Fatalf("%s: filled invalid constraints %+v: %v", what, c, errs)
		}
	}
	for i := 0; i < 200; i++ {
		pg := &scheduling.PodGroup{}
		f.Fill(pg)
		check("podgroup", pg.Spec.SchedulingConstraints, field.NewPath("spec", "schedulingConstraints"))
		for j := range pg.Spec.Roles {
			check("role", pg.Spec.Roles[j].SchedulingConstraints, field.NewPath("spec", "roles").Index(j).Child("schedulingConstraints"))
		}
		if pg.Status.TopologyDomain != nil {
			seen["status.topologyDomain"]++
		}
		for _, r := range pg.Status.Roles {
			if r.TopologyDomain != nil {
				seen["status.roles.topologyDomain"]++
			}
		}
		w := &scheduling.Workload{}
		f.Fill(w)
		for j := range w.Spec.PodGroupTemplates {
			check("workload template", w.Spec.PodGroupTemplates[j].SchedulingConstraints, field.NewPath("spec", "podGroupTemplates").Index(j).Child("schedulingConstraints"))
		}
	}
	for _, what := range []string{"podgroup", "role", "workload template", "topology", "preferredTopology", "slice", "status.topologyDomain", "status.roles.topologyDomain"} {
		if seen[what] == 0 {
			t.Errorf("%s was never filled", what)
		}
	}
}

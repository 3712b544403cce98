package fuzzer

import (
	"math/rand"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
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

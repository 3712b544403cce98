package autoscaling

import (
	"os"
	"testing"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/diff"
	"sigs.k8s.io/yaml"
)

// TestPriorityClassArtifactMatchesBuilder keeps
// charts/muster/files/priorityclass.yaml, which deployments apply, in step with
// PriorityClass, which the local cluster creates.
func TestPriorityClassArtifactMatchesBuilder(t *testing.T) {
	data, err := os.ReadFile("../../../charts/muster/files/priorityclass.yaml")
	if err != nil {
		t.Fatalf("reading artifacts: %v", err)
	}
	var got schedulingv1.PriorityClass
	if err := yaml.UnmarshalStrict(data, &got); err != nil {
		t.Fatalf("decoding the PriorityClass: %v", err)
	}
	if want := PriorityClass(); !apiequality.Semantic.DeepEqual(want, &got) {
		t.Errorf("priorityclass.yaml differs from the builder:\n%s", diff.Diff(want, &got))
	}
}

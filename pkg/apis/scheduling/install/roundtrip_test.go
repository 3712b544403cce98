package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"

	schedulingfuzzer "github.com/muster-dev/muster/pkg/apis/scheduling/fuzzer"
)

// TestRoundTripTypes converts random internal objects to v1alpha1, through
// JSON and back, and expects them unchanged. Muster's types carry no protobuf
// tags, and the helper tests JSON only. The fuzzer fills every field,
// schedulingConstraints and topologyDomain included
// (fuzzer.TestSchedulingConstraintsAreFilled).
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripTestForAPIGroup(t, Install, fuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, schedulingfuzzer.Funcs))
}

package validation_test

import (
	"encoding/json"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/apis/scheduling/validation"
	"github.com/muster-dev/muster/pkg/apiserver"
)

// FuzzDecodeAndValidate feeds arbitrary bytes through what the server does
// with a request body: decode (JSON or YAML, PodGroup or Workload), default,
// convert to the internal type, and validate it as a create, an update and
// a status update. None of it may panic. An object that validates must
// survive the way back (to v1alpha1, JSON, and in again) unchanged, and
// still validate.
// Run it with: make fuzz, or go test ./pkg/apis/scheduling/validation -run '^$' -fuzz FuzzDecodeAndValidate
func FuzzDecodeAndValidate(f *testing.F) {
	for _, s := range []string{
		`{"apiVersion":"scheduling.muster.dev/v1alpha1","kind":"PodGroup","metadata":{"name":"g","namespace":"ns"},"spec":{"schedulingPolicy":{"gang":{"minCount":8}}}}`,
		`{"apiVersion":"scheduling.muster.dev/v1alpha1","kind":"PodGroup","metadata":{"name":"g","namespace":"ns"},"spec":{"schedulingPolicy":{"basic":{}},"schedulingGates":[{"name":"example.com/hold"}]}}`,
		`{"apiVersion":"scheduling.muster.dev/v1alpha1","kind":"PodGroup","metadata":{"name":"s","namespace":"ns"},"spec":{"schedulingPolicy":{"gang":{"minCount":5}},"roles":[{"name":"driver","count":1},{"name":"worker","count":4,"template":{"requests":{"cpu":"2"},"nodeSelector":{"pool":"a"}}}]}}`,
		`{"apiVersion":"scheduling.muster.dev/v1alpha1","kind":"PodGroup","metadata":{"name":"g","namespace":"ns"},"spec":{"schedulingPolicy":{"gang":{"minCount":2}}},"status":{"succeeded":1,"uncountedTerminatedPods":{"failed":["u"]},"conditions":[{"type":"Admitted","status":"True","reason":"GangFits","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`,
		`{"apiVersion":"scheduling.muster.dev/v1alpha1","kind":"Workload","metadata":{"name":"w","namespace":"ns"},"spec":{"podGroupTemplates":[{"name":"t","schedulingPolicy":{"gang":{"minCount":4}}}]}}`,
		`{"apiVersion":"scheduling.muster.dev/v1alpha1","kind":"PodGroup","metadata":{"name":"t","namespace":"ns"},"spec":{"schedulingPolicy":{"gang":{"minCount":8}},"schedulingConstraints":{"topology":[{"key":"topology.kubernetes.io/zone"}],"preferredTopology":[{"key":"example.com/rack"}],"slice":{"key":"example.com/rack","size":4}}},"status":{"topologyDomain":{"key":"topology.kubernetes.io/zone","value":"a"}}}`,
		`{"apiVersion":"scheduling.muster.dev/v1alpha1","kind":"Workload","metadata":{"name":"w","namespace":"ns"},"spec":{"podGroupTemplates":[{"name":"t","schedulingPolicy":{"gang":{"minCount":2}},"schedulingConstraints":{"topology":[{"key":"a"},{"key":"b"}]},"roles":[{"name":"r","count":2,"schedulingConstraints":{"slice":{"key":"k","size":0}}}]}]}}`,
		"apiVersion: scheduling.muster.dev/v1alpha1\nkind: PodGroup\nmetadata:\n  name: y\nspec:\n  schedulingPolicy:\n    gang:\n      minCount: 3\n",
		`{"apiVersion":"scheduling.muster.dev/v1alpha1","kind":"PodGroup","spec":{"schedulingPolicy":{"gang":{"minCount":-1}},"roles":[{"name":"","count":0}]}}`,
		`{"apiVersion":"scheduling.muster.dev/v1alpha1","kind":"PodGroup","spec":null}`,
		`{}`, `[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	decoder := apiserver.Codecs.UniversalDeserializer()
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, _, err := decoder.Decode(data, nil, nil)
		if err != nil {
			return
		}
		switch in := obj.(type) {
		case *v1alpha1.PodGroup:
			pg := &scheduling.PodGroup{}
			if !toInternal(in, pg) {
				return
			}
			errs := validation.ValidatePodGroup(pg)
			validation.ValidatePodGroupUpdate(pg, pg)
			validation.ValidatePodGroupStatusUpdate(pg, pg)
			if len(errs) == 0 {
				again := &scheduling.PodGroup{}
				roundTrip(t, pg, &v1alpha1.PodGroup{}, again)
				expectSame(t, pg, again, validation.ValidatePodGroup(again))
			}
		case *v1alpha1.Workload:
			w := &scheduling.Workload{}
			if !toInternal(in, w) {
				return
			}
			errs := validation.ValidateWorkload(w)
			validation.ValidateWorkloadUpdate(w, w)
			validation.ValidateWorkloadStatusUpdate(w, w)
			if len(errs) == 0 {
				again := &scheduling.Workload{}
				roundTrip(t, w, &v1alpha1.Workload{}, again)
				expectSame(t, w, again, validation.ValidateWorkload(again))
			}
		}
	})
}

// toInternal defaults a versioned object and converts it, as the server's
// decoder does; false means the conversion refused it.
func toInternal(in, out runtime.Object) bool {
	apiserver.Scheme.Default(in)
	return apiserver.Scheme.Convert(in, out, nil) == nil
}

// roundTrip converts internal to versioned, through JSON, and back into again.
func roundTrip(t *testing.T, internal, versioned, again runtime.Object) {
	t.Helper()
	if err := apiserver.Scheme.Convert(internal, versioned, nil); err != nil {
		t.Fatalf("converting a valid object back to v1alpha1: %v", err)
	}
	data, err := json.Marshal(versioned)
	if err != nil {
		t.Fatalf("encoding a valid object: %v", err)
	}
	fresh := versioned.DeepCopyObject()
	if err := json.Unmarshal(data, fresh); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	if !toInternal(fresh, again) {
		t.Fatalf("converting %s in again failed", data)
	}
}

func expectSame(t *testing.T, before, after runtime.Object, errs field.ErrorList) {
	t.Helper()
	if !apiequality.Semantic.DeepEqual(before, after) {
		t.Fatalf("a valid object changed on its way back:\n before %#v\n after  %#v", before, after)
	}
	if len(errs) != 0 {
		t.Fatalf("a valid object is invalid after its way back: %v", errs)
	}
}

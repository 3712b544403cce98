package podgroup

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	evanjsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// TestPodPatches applies the patches the controller builds to the pod they
// were built from, or to the pod as it is now in the API, as the API server
// does.
func TestPodPatches(t *testing.T) {
	cases := []struct {
		name      string
		makePatch func(*corev1.Pod) ([]byte, bool)
		read      *corev1.Pod // what the controller built the patch from
		stored    *corev1.Pod // what the API holds; read if nil
		wantPatch string
		notNeeded bool
		wantFail  bool
		gates     []string
		final     []string
	}{{
		name:      "the gate patch removes Muster's gate and tests the uid and the gate's name",
		makePatch: removeGatePatch,
		read:      newPod("p"),
		wantPatch: gatePatch(newPod("p"), 0),
		final:     []string{scheduling.TrackingFinalizer},
	}, {
		name:      "the gate patch leaves other tools' gates alone",
		makePatch: removeGatePatch,
		read:      newPod("p", gates("example.com/a", scheduling.AdmissionGate, "example.com/b")),
		wantPatch: gatePatch(newPod("p"), 1),
		gates:     []string{"example.com/a", "example.com/b"},
		final:     []string{scheduling.TrackingFinalizer},
	}, {
		name:      "a pod without Muster's gate needs no gate patch",
		makePatch: removeGatePatch,
		read:      newPod("p", gates("example.com/a")),
		notNeeded: true,
	}, {
		name:      "the gate patch fails on a re-created pod of the same name",
		makePatch: removeGatePatch,
		read:      newPod("p"),
		stored:    newPod("p", func(p *corev1.Pod) { p.UID = "uid-new" }),
		wantPatch: gatePatch(newPod("p"), 0),
		wantFail:  true,
	}, {
		name:      "the gate patch fails rather than remove another gate that moved into its place",
		makePatch: removeGatePatch,
		read:      newPod("p", gates("example.com/a", scheduling.AdmissionGate)),
		stored:    newPod("p", gates(scheduling.AdmissionGate, "example.com/a")),
		wantPatch: gatePatch(newPod("p"), 1),
		wantFail:  true,
	}, {
		name:      "the gate patch puts the tracking finalizer back on an adopted pod that has no finalizers",
		makePatch: removeGatePatch,
		read:      newPod("p", noFinalizer, withRV("7")),
		wantPatch: strings.TrimSuffix(gatePatch(newPod("p"), 0), "]") +
			`,{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"add","path":"/metadata/finalizers","value":["` + scheduling.TrackingFinalizer + `"]}]`,
		final: []string{scheduling.TrackingFinalizer},
	}, {
		name:      "the gate patch appends the tracking finalizer to an adopted pod's other finalizers",
		makePatch: removeGatePatch,
		read:      newPod("p", finalizers("example.com/keep")),
		wantPatch: strings.TrimSuffix(gatePatch(newPod("p"), 0), "]") +
			`,{"op":"add","path":"/metadata/finalizers/-","value":"` + scheduling.TrackingFinalizer + `"}]`,
		final: []string{"example.com/keep", scheduling.TrackingFinalizer},
	}, {
		name:      "the adopting gate patch fails rather than replace a finalizer set since the pod was read",
		makePatch: removeGatePatch,
		read:      newPod("p", noFinalizer, withRV("7")),
		stored:    newPod("p", finalizers("example.com/new"), withRV("8")),
		wantPatch: strings.TrimSuffix(gatePatch(newPod("p"), 0), "]") +
			`,{"op":"test","path":"/metadata/resourceVersion","value":"7"},{"op":"add","path":"/metadata/finalizers","value":["` + scheduling.TrackingFinalizer + `"]}]`,
		wantFail: true,
	}, {
		name:      "a gated pod being deleted does not get the tracking finalizer back",
		makePatch: removeGatePatch,
		read:      newPod("p", noFinalizer, deletedAt(t0)),
		wantPatch: gatePatch(newPod("p"), 0),
	}, {
		name:      "a terminal gated pod does not get the tracking finalizer back",
		makePatch: removeGatePatch,
		read:      newPod("p", noFinalizer, func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
		wantPatch: gatePatch(newPod("p"), 0),
	}, {
		name:      "the finalizer patch removes the tracking finalizer and tests the uid and its name",
		makePatch: removeFinalizerPatch,
		read:      newPod("p", ungated),
		wantPatch: finalizerPatch(newPod("p"), 0),
	}, {
		name:      "the finalizer patch leaves other finalizers alone",
		makePatch: removeFinalizerPatch,
		read:      newPod("p", ungated, finalizers("example.com/keep", scheduling.TrackingFinalizer)),
		wantPatch: finalizerPatch(newPod("p"), 1),
		final:     []string{"example.com/keep"},
	}, {
		name:      "a pod without the tracking finalizer needs no finalizer patch",
		makePatch: removeFinalizerPatch,
		read:      newPod("p", noFinalizer),
		notNeeded: true,
	}, {
		name:      "the finalizer patch fails on a re-created pod of the same name",
		makePatch: removeFinalizerPatch,
		read:      newPod("p", ungated),
		stored:    newPod("p", ungated, func(p *corev1.Pod) { p.UID = "uid-new" }),
		wantPatch: finalizerPatch(newPod("p"), 0),
		wantFail:  true,
	}, {
		name:      "the finalizer patch fails if the finalizer already came off",
		makePatch: removeFinalizerPatch,
		read:      newPod("p", ungated, finalizers(scheduling.TrackingFinalizer, "example.com/keep")),
		stored:    newPod("p", ungated, finalizers("example.com/keep")),
		wantPatch: finalizerPatch(newPod("p"), 0),
		wantFail:  true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			patch, needed := tc.makePatch(tc.read)
			if needed == tc.notNeeded {
				t.Fatalf("needed = %v, want %v", needed, !tc.notNeeded)
			}
			if tc.notNeeded {
				return
			}
			if string(patch) != tc.wantPatch {
				t.Errorf("patch:\n got %s\nwant %s", patch, tc.wantPatch)
			}
			stored := tc.stored
			if stored == nil {
				stored = tc.read
			}
			doc, err := json.Marshal(stored)
			if err != nil {
				t.Fatal(err)
			}
			decoded, err := evanjsonpatch.DecodePatch(patch)
			if err != nil {
				t.Fatalf("decoding patch: %v", err)
			}
			out, err := decoded.Apply(doc)
			if tc.wantFail {
				if err == nil {
					t.Fatalf("patch applied to a pod that changed; want a failed test operation")
				}
				if !errors.Is(err, evanjsonpatch.ErrTestFailed) && !errors.Is(err, evanjsonpatch.ErrMissing) {
					t.Errorf("error = %v, want a failed test operation", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("applying patch: %v", err)
			}
			var got corev1.Pod
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if g := gateNames(&got); !slices.Equal(g, tc.gates) {
				t.Errorf("gates after patch = %v, want %v", g, tc.gates)
			}
			if !slices.Equal(got.Finalizers, tc.final) {
				t.Errorf("finalizers after patch = %v, want %v", got.Finalizers, tc.final)
			}
		})
	}
}

package pods

import (
	"encoding/json"
	"fmt"

	evanjsonpatch "gopkg.in/evanphx/json-patch.v4"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// mutationPatch is the mutating webhook's answer for a new pod: the JSON
// patch it returns (nil when it changes nothing) and its warnings, or its
// refusal (errs). err is a failure to encode the patch, which cannot
// happen. The handler sends the patch and Prepare applies it, so that
// what a what-if review sees of the webhook is what kube-apiserver gets.
func mutationPatch(pod *corev1.Pod) (patch []byte, warnings []string, errs field.ErrorList, err error) {
	ops, warnings, errs := mutate(pod)
	if len(errs) > 0 {
		return nil, nil, errs, nil
	}
	if len(ops) == 0 {
		return nil, warnings, nil, nil
	}
	if patch, err = json.Marshal(ops); err != nil {
		// Unreachable: ops hold only strings, maps and gates.
		return nil, nil, nil, fmt.Errorf("encoding patch: %w", err)
	}
	return patch, warnings, nil, nil
}

// Prepare returns a copy of a new pod as Muster's webhooks would let
// kube-apiserver create it: the mutating webhook's patch applied to the
// pod's JSON with the library kube-apiserver applies it with, then the
// validating webhook's checks of the result, which runs after every
// mutation. It is for a what-if review (pkg/whatif), which must see the
// pod exactly as admission would, and so calls the webhook's own code
// rather than a copy of its rules. warnings are the mutating webhook's
// (a pod bound at creation is not held). errs are the refusals of either
// webhook, with the pod's field paths, and the pod is then nil; pod itself
// is never changed. Like the webhook, it reads only the pod, so it
// answers for a pod whatever its namespace.
func Prepare(pod *corev1.Pod) (*corev1.Pod, []string, field.ErrorList) {
	patch, warnings, errs, err := mutationPatch(pod)
	if err != nil {
		return nil, nil, field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	out := pod.DeepCopy()
	if patch != nil {
		if out, err = patchPod(pod, patch); err != nil {
			// Unreachable for a patch of mutate's (FuzzPod proves it
			// applies); said as a refusal rather than a crash.
			return nil, nil, field.ErrorList{field.InternalError(field.NewPath("metadata"), err)}
		}
	}
	if errs := validateCreate(out); len(errs) > 0 {
		return nil, warnings, errs
	}
	return out, warnings, nil
}

// patchPod applies a JSON patch to pod's JSON, as kube-apiserver applies
// a webhook's patch to its typed object encoded again.
func patchPod(pod *corev1.Pod, patch []byte) (*corev1.Pod, error) {
	decoded, err := evanjsonpatch.DecodePatch(patch)
	if err != nil {
		return nil, fmt.Errorf("decoding the webhook's patch %s: %w", patch, err)
	}
	doc, err := json.Marshal(pod)
	if err != nil {
		return nil, fmt.Errorf("encoding the pod: %w", err)
	}
	if doc, err = decoded.Apply(doc); err != nil {
		return nil, fmt.Errorf("applying the webhook's patch %s: %w", patch, err)
	}
	out := &corev1.Pod{}
	if err := json.Unmarshal(doc, out); err != nil {
		return nil, fmt.Errorf("decoding the patched pod: %w", err)
	}
	return out, nil
}

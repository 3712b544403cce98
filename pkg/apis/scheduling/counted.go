package scheduling

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// CountedValue is the CountedLabel value for a pod counted with phase
// result (Succeeded or Failed) in the PodGroup of UID group. Both parts fit
// a label value: at most 9 + 1 + 36 characters of [A-Za-z0-9.-].
func CountedValue(result corev1.PodPhase, group types.UID) string {
	return string(result) + "." + string(group)
}

// CountedIn says whether p carries CountedLabel for the PodGroup of UID
// group, and with which result. A label for another group, one with an
// unknown result, or one that does not parse says nothing.
func CountedIn(p *corev1.Pod, group types.UID) (result corev1.PodPhase, ok bool) {
	result_, uid, found := strings.Cut(p.Labels[CountedLabel], ".")
	if !found || uid == "" || types.UID(uid) != group {
		return "", false
	}
	switch r := corev1.PodPhase(result_); r {
	case corev1.PodSucceeded, corev1.PodFailed:
		return r, true
	}
	return "", false
}

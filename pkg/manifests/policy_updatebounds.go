package manifests

import (
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// updateBounds are the policy's bounds on what an update may add to a
// labelled pod's inputs to Muster's pod cache (issue 21, item 4). On create
// the validating webhook measures them in bytes (scheduling.go); updates
// never reach it while this policy is installed, and CEL cannot measure a
// map or list in bytes, so an update is bounded by counts that cannot pass
// the byte bounds: it may not bring the labels above LabelCheckCount, nor
// the tolerations above SchedulingCheckTolerations, nor the nodeSelector
// above NodeSelectorCheckCount entries, unless they do not grow,
// and each of Muster's annotations it changes is at most
// MaxPodMusterAnnotationBytes. A pod created within the bounds stays
// updatable. Affinity and topology spread are immutable on a pod once
// created, but for the node affinity a gated pod may narrow (KEP-3838),
// which is not bounded here.
func updateBounds() []admissionregistrationv1.Validation {
	labels := func(root string) string {
		return fmt.Sprintf("(has(%[1]s.metadata.labels) ? size(%[1]s.metadata.labels) : 0)", root)
	}
	tolerations := func(root string) string {
		return fmt.Sprintf("size(%s)", celList(root, "spec.tolerations"))
	}
	nodeSelector := func(root string) string {
		return fmt.Sprintf("(has(%[1]s.spec.nodeSelector) ? size(%[1]s.spec.nodeSelector) : 0)", root)
	}
	keys := make([]string, len(scheduling.PodAnnotationKeys))
	for i, k := range scheduling.PodAnnotationKeys {
		keys[i] = celString(k)
	}
	annotation := func(root string) string { return root + ".metadata.annotations" }
	return []admissionregistrationv1.Validation{
		{
			Expression: fmt.Sprintf("oldObject == null || %[1]s <= %[3]d || %[1]s <= %[2]s", labels("object"), labels("oldObject"), scheduling.LabelCheckCount),
			MessageExpression: fmt.Sprintf("'metadata.labels: Too many: ' + string(%s) + ': must have at most %d items when an update adds labels; "+
				"Muster keeps every label of a pod in its group (MaxPodLabelBytes)'", labels("object"), scheduling.LabelCheckCount),
			Reason: ptr.To(metav1.StatusReasonInvalid),
		},
		{
			Expression: fmt.Sprintf("oldObject == null || %[1]s <= %[3]d || %[1]s <= %[2]s", tolerations("object"), tolerations("oldObject"), scheduling.SchedulingCheckTolerations),
			MessageExpression: fmt.Sprintf("'spec.tolerations: Too many: ' + string(%s) + ': must have at most %d items when an update adds tolerations; "+
				"Muster keeps the tolerations of a pod in its group (MaxPodSchedulingBytes)'", tolerations("object"), scheduling.SchedulingCheckTolerations),
			Reason: ptr.To(metav1.StatusReasonInvalid),
		},
		{
			Expression: fmt.Sprintf("oldObject == null || %[1]s <= %[3]d || %[1]s <= %[2]s", nodeSelector("object"), nodeSelector("oldObject"), scheduling.NodeSelectorCheckCount),
			MessageExpression: fmt.Sprintf("'spec.nodeSelector: Too many: ' + string(%s) + ': must have at most %d items when an update adds to it; "+
				"Muster keeps the nodeSelector of a pod in its group (MaxPodSchedulingBytes)'", nodeSelector("object"), scheduling.NodeSelectorCheckCount),
			Reason: ptr.To(metav1.StatusReasonInvalid),
		},
		{
			Expression: fmt.Sprintf("oldObject == null || !has(%[1]s) || [%[3]s].all(k, !(k in %[1]s) || "+
				"(has(%[2]s) && k in %[2]s && %[2]s[k] == %[1]s[k]) || size(%[1]s[k]) <= %[4]d)",
				annotation("object"), annotation("oldObject"), strings.Join(keys, ", "), scheduling.MaxPodMusterAnnotationBytes),
			Message: fmt.Sprintf("metadata.annotations: Too long: each of Muster's annotations an update changes must have at most %d bytes (MaxPodMusterAnnotationBytes)",
				scheduling.MaxPodMusterAnnotationBytes),
			Reason: ptr.To(metav1.StatusReasonInvalid),
		},
	}
}

// containerBound is the create's bound on a labelled pod's containers and
// init containers together, scheduling.MaxPodContainers, with the message
// the webhook's validateContainerCount gives (containers cannot change on
// update).
func containerBound() admissionregistrationv1.Validation {
	count := "size(object.spec.containers) + (has(object.spec.initContainers) ? size(object.spec.initContainers) : 0)"
	return admissionregistrationv1.Validation{
		Expression: fmt.Sprintf("oldObject != null || %s <= %d", count, scheduling.MaxPodContainers),
		MessageExpression: fmt.Sprintf("(has(object.spec.initContainers) && size(object.spec.initContainers) > size(object.spec.containers) ? 'spec.initContainers' : 'spec.containers') + "+
			"': Too many: ' + string(%[1]s) + ': spec.containers and spec.initContainers are ' + string(%[1]s) + "+
			"' together; a pod with the %[2]s label may have at most %[3]d, whose requests Muster keeps in memory while the pod waits'",
			count, scheduling.PodGroupLabel, scheduling.MaxPodContainers),
		Reason: ptr.To(metav1.StatusReasonInvalid),
	}
}

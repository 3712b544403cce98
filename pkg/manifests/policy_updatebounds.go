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
// labelled pod's inputs to Muster's pod cache (issue 21, item 4; issue 34,
// item 2). On create the validating webhook measures them in bytes
// (scheduling.go); updates never reach it while this policy is installed.
// An update may not bring the labels above LabelCheckCount, nor the
// tolerations above SchedulingCheckTolerations, nor the nodeSelector above
// NodeSelectorCheckCount entries, unless they do not grow. Muster's
// annotations and the required node affinity that a gated pod may narrow
// (KEP-3838) are measured in bytes, as UTF-8 (CEL's size of a string
// counts code points, up to 4 bytes each): an update that makes them
// larger keeps Muster's annotations within MaxPodMusterAnnotationBytes
// together, and the required node affinity within MaxPodSchedulingBytes as
// JSON (affinityBytes). A pod created within the bounds stays updatable.
// The rest of the affinity and the topology spread are immutable once the
// pod is created.
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
			Expression: fmt.Sprintf("oldObject == null || %[1]s <= %[3]d || %[1]s <= %[2]s",
				annotationBytes("object", keys), annotationBytes("oldObject", keys), scheduling.MaxPodMusterAnnotationBytes),
			MessageExpression: fmt.Sprintf("'metadata.annotations: Too long: Muster\\'s annotations are ' + string(%s) + ' bytes together: "+
				"an update may bring them to at most %d (MaxPodMusterAnnotationBytes), which Muster keeps in memory while the pod waits'",
				annotationBytes("object", keys), scheduling.MaxPodMusterAnnotationBytes),
			Reason: ptr.To(metav1.StatusReasonInvalid),
		},
		{
			Expression: fmt.Sprintf("oldObject == null || %[1]s <= %[3]d || %[1]s <= %[2]s",
				affinityBytes("object"), affinityBytes("oldObject"), scheduling.MaxPodSchedulingBytes),
			MessageExpression: fmt.Sprintf("'spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: Too long: about ' + string(%s) + ' bytes of JSON: "+
				"an update may bring it to at most %d (MaxPodSchedulingBytes), which Muster keeps in memory while the pod waits'",
				affinityBytes("object"), scheduling.MaxPodSchedulingBytes),
			Reason: ptr.To(metav1.StatusReasonInvalid),
		},
	}
}

// annotationBytes is CEL for the bytes of Muster's annotations (keys, CEL
// string literals) on root, keys and values together, as UTF-8.
func annotationBytes(root string, keys []string) string {
	a := root + ".metadata.annotations"
	return fmt.Sprintf("(has(%[1]s) ? [%[2]s].filter(k, k in %[1]s).map(k, size(bytes(k)) + size(bytes(%[1]s[k]))).sum() : 0)", a, strings.Join(keys, ", "))
}

// affinityBytes is CEL for about how many bytes of JSON root's required
// node affinity takes: each requirement's key, operator and values as
// UTF-8, plus the JSON around them (about 40 bytes a requirement and 3 a
// value), so that short values cannot pass the bound many times over. It
// runs in steps bounded whatever the affinity's length (cel.go): a value
// list is measured by join, in one call, and the terms and requirements
// are counted first; where there are more than the bound can hold (a term
// takes at least 30 bytes, a requirement 40), the answer is that lower
// bound, past MaxPodSchedulingBytes, and no comprehension runs over them.
func affinityBytes(root string) string {
	terms := celOpt(root, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms")
	count := func(list string) string {
		return fmt.Sprintf("(has(t.%[1]s) ? size(t.%[1]s) : 0)", list)
	}
	reqs := func(list string) string {
		return fmt.Sprintf("(has(t.%[1]s) ? t.%[1]s.map(r, 40 + size(bytes(r.key)) + size(bytes(r.operator)) + "+
			"(has(r.values) ? 3 * size(r.values) + size(bytes(r.values.join(''))) : 0)).sum() : 0)", list)
	}
	requirements := fmt.Sprintf("%s[0].map(t, %s + %s).sum()", terms, count("matchExpressions"), count("matchFields"))
	measured := fmt.Sprintf("%s[0].map(t, 30 + %s + %s).sum()", terms, reqs("matchExpressions"), reqs("matchFields"))
	return fmt.Sprintf("(size(%[1]s) == 0 ? 0 : size(%[1]s[0]) > %[2]d ? 30 * size(%[1]s[0]) : %[3]s > %[4]d ? 40 * %[3]s : %[5]s)",
		terms, scheduling.MaxPodSchedulingBytes/30, requirements, scheduling.MaxPodSchedulingBytes/40, measured)
}

// countBounds are the bounds on a labelled pod's scheduling gates and
// finalizers (scheduling.MaxPodSchedulingGates, MaxPodFinalizers): at most
// so many on create, and an update may not grow them past it.
func countBounds() []admissionregistrationv1.Validation {
	bound := func(path string, most int, name string) admissionregistrationv1.Validation {
		n := fmt.Sprintf("size(%s)", celList("object", path))
		return admissionregistrationv1.Validation{
			Expression: fmt.Sprintf("%[1]s <= %[2]d || (oldObject != null && %[1]s <= size(%[3]s))", n, most, celList("oldObject", path)),
			MessageExpression: fmt.Sprintf("'%s: Too many: ' + string(%s) + ': must have at most %d items on a pod with the %s label, "+
				"and an update may not add past that; Muster\\'s admission policies look through them on every write of the pod (%s)'",
				path, n, most, scheduling.PodGroupLabel, name),
			Reason: ptr.To(metav1.StatusReasonInvalid),
		}
	}
	return []admissionregistrationv1.Validation{
		bound("spec.schedulingGates", scheduling.MaxPodSchedulingGates, "MaxPodSchedulingGates"),
		bound("metadata.finalizers", scheduling.MaxPodFinalizers, "MaxPodFinalizers"),
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

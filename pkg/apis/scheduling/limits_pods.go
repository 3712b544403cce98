package scheduling

// Bounds on what a labelled pod may carry into Muster's pod cache (issue 21,
// item 4). The controller keeps each gated pod's scheduling inputs whole,
// since placement runs kube-scheduler's filters on them; without a bound, a
// user who may only create pods could make every replica's cache as large as
// their quota of pods times kube-apiserver's object limit (about 1.5 MiB).
// docs/limits.md lists every bound with its value and why.
const (
	// MaxPodSchedulingBytes bounds, on the create of a pod that carries the
	// group label, the size of its spec.nodeSelector, spec.affinity,
	// spec.tolerations and spec.topologySpreadConstraints together, as
	// JSON. 32 KiB holds a
	// node affinity that names about 1,000 hosts, or a few dozen terms of
	// pod (anti-)affinity with their selectors, with room to spare: real
	// workloads use a few hundred bytes (a one-per-node anti-affinity is
	// about 200). At the bound, 300 such pods with distinct inputs cost the
	// cache about 300 x 100 KiB decoded; a gang's identical inputs are kept
	// once (podgroup.TransformPod).
	MaxPodSchedulingBytes = 32 << 10

	// SchedulingCheckTolerations is how many tolerations a labelled pod may
	// carry, with no affinity and no topology spread, before its create is
	// sent to the validating webhook to be measured against
	// MaxPodSchedulingBytes. A toleration is at most about 450 bytes of
	// JSON (a 317-character key, a 63-character value, effect, operator
	// and seconds), so 16 of them cannot reach the bound, and a pod with
	// the usual two or three never costs a webhook call.
	SchedulingCheckTolerations = 16

	// NodeSelectorCheckCount is how many entries a labelled pod's
	// spec.nodeSelector may have before its create is sent to the
	// validating webhook to be measured against MaxPodSchedulingBytes, and
	// how many an update may bring it to, unless it does not grow (KEP-3838
	// lets a gated pod's nodeSelector gain entries). An entry is at most
	// about 386 bytes of JSON (a 317-character key and a 63-character
	// value), so 16 of them, beside 16 tolerations, cannot reach the bound.
	NodeSelectorCheckCount = 16

	// MaxPodContainers bounds, on the create of a pod that carries the group
	// label, its containers and init containers together. The pod cache
	// keeps each container's requests and ports (capacity.TrimContainers),
	// so without a bound one pod of many empty containers, within
	// kube-apiserver's object limit, would cost the cache many times its
	// size. Real pods have a handful; kube-apiserver sets no limit.
	MaxPodContainers = 64

	// MaxPodMusterAnnotationBytes bounds, on the create of a pod that
	// carries the group label, the size of the Muster annotations the
	// controller reads (PodAnnotationKeys), keys and values together. Only
	// the roles template can be long: up to MaxRoles roles, each with a
	// template of requests, node selector, node affinity and tolerations;
	// 64 KiB holds eight such templates of several KiB each. The pod cache
	// keeps these annotations, and no other annotation of the pod.
	MaxPodMusterAnnotationBytes = 64 << 10

	// MaxPodLabelBytes bounds, on the create of a pod that carries the
	// group label, the size of its labels, keys and values together. The
	// pod cache keeps every label, since other pods' affinity selects on
	// them. Real pods carry a few dozen labels, a few KiB; 32 KiB is more
	// than 80 labels of the longest key and value the API accepts.
	MaxPodLabelBytes = 32 << 10

	// MaxPodSchedulingGates and MaxPodFinalizers bound, on the create of a
	// pod that carries the group label, its scheduling gates and its
	// finalizers, Muster's own included; an update may not bring the
	// finalizers above MaxPodFinalizers unless they do not grow (gates
	// cannot be added after creation). Muster's admission policies look
	// through both on a labelled pod's writes, in kube-apiserver, where a
	// CEL comprehension takes time quadratic in its list's length; real
	// pods carry a few of each, and kube-apiserver sets no limit.
	MaxPodSchedulingGates = 32
	MaxPodFinalizers      = 32

	// LabelCheckCount is how many labels a labelled pod may carry before
	// its create is sent to the validating webhook to be measured against
	// MaxPodLabelBytes: a label is at most 386 bytes (a 317-character key
	// and a 63-character value), so 64 of them cannot reach the bound.
	LabelCheckCount = 64
)

// PodAnnotationKeys are the pod annotations the controller reads, and the
// only annotations the pod cache keeps.
var PodAnnotationKeys = []string{
	MinCountAnnotation, WorkloadAnnotation, TemplateAnnotation, GroupByAnnotation,
	RolesAnnotation, RoleCountAnnotation, RolesTemplateAnnotation,
	TopologyRequiredAnnotation, TopologyPreferredAnnotation, TopologySliceKeyAnnotation, TopologySliceSizeAnnotation,
}

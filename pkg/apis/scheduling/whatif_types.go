package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WhatIfReview asks what Muster's admission would decide for a gang if it
// were submitted now, without submitting it. Like SubjectAccessReview it
// can only be created, and is never stored: the answer comes back in
// status. It writes nothing, reserves nothing and records no event.
type WhatIfReview struct {
	metav1.TypeMeta
	// Standard object metadata. The namespace is the one the workload would
	// be submitted to.
	metav1.ObjectMeta

	// Spec is the workload to ask about.
	Spec WhatIfReviewSpec

	// Status is the answer, filled in by the server.
	Status WhatIfReviewStatus
}

// WhatIfReviewSpec is the workload a WhatIfReview asks about.
type WhatIfReviewSpec struct {
	// Object is the workload as it would be submitted: a batch/v1 Job, a
	// jobset.x-k8s.io JobSet, a v1 Pod, or a v1 List of Pods. Its pods
	// must carry the label scheduling.muster.dev/pod-group, as they would
	// to form a gang; a namespace, when set, must be the review's. It may
	// be left empty when podGroup has roles, each with a template unless
	// it is createdLater (a PodGroup with pod templates): the review then
	// makes the gang's pods from the templates, count pods of each role
	// not createdLater, named <group>-<role>-<index>.
	Object runtime.RawExtension

	// PodGroup is the group the pods would form, when it would be created
	// beside them. Without it the group is the one that stands under the
	// pods' group name, or else the one the controller would create: from
	// the pods' annotations, or sized by the object. It is required when
	// object is empty.
	PodGroup *PodGroup
}

// WhatIfReviewStatus is what admission would decide, on the cluster as it
// is when the review is answered.
type WhatIfReviewStatus struct {
	// PodGroup is the name of the group the pods would form.
	PodGroup string
	// MinCount is how many of its pods must be placed at once.
	MinCount int32
	// Pods is how many pods the workload would create.
	Pods int32
	// Priority is the gang's priority, as admission orders it.
	Priority int32

	// Admitted says that admission would admit the gang now.
	Admitted bool
	// Reason and Message are what the group's Admitted condition would
	// say: why it waits, or that it would preempt.
	Reason  string
	Message string

	// Placements are where admission would put each pod, in the order of
	// the workload's pods. Set when the gang would be admitted, or would
	// preempt to fit.
	Placements []WhatIfPlacement
	// Domain is the topology domain the gang would be placed in, when its
	// group asks for one.
	Domain string

	// Preemptions are the gangs whose pods admission would preempt to make
	// room, each named only where the caller may get pods in its
	// namespace.
	Preemptions []WhatIfPreemption

	// Autoscaler is what Muster would ask of the cluster autoscaler for the
	// gang, when it would ask.
	Autoscaler *WhatIfAutoscaler

	// Queue is where the gang would stand in admission order.
	Queue QueuePosition
}

// WhatIfPlacement is where one pod would go.
type WhatIfPlacement struct {
	// Pod names the pod as the workload's controller would name it, or
	// by its index when the name is generated.
	Pod string
	// Node is the node admission would pin it to.
	Node string
}

// WhatIfPreemption is one gang admission would preempt.
type WhatIfPreemption struct {
	// Namespace and PodGroup name the victim's group. They are empty when
	// the caller may not get pods in that namespace.
	Namespace string
	PodGroup  string
	// Pods is how many of its pods would be evicted.
	Pods int32
	// Priority is the victim's priority.
	Priority int32
}

// WhatIfAutoscaler is what Muster would ask of the autoscaler.
type WhatIfAutoscaler struct {
	// Ask says that Muster would ask for nodes for the gang.
	Ask bool
	// Pods is how many of the gang's pods the request would ask room for.
	Pods int32
	// Message says what would be asked, or why nothing would be.
	Message string
}

// QueuePosition is where a gang stands in Muster's admission order, as far
// as its own namespace may see.
type QueuePosition struct {
	// Position is the gang's place in admission order, from 1, among all
	// the gangs that wait in the cluster.
	Position int32
	// Waiting is how many gangs wait in the cluster, this one included.
	Waiting int32
	// Ahead names the gangs of the same namespace that come before it, in
	// admission order.
	Ahead []string
	// AheadElsewhere counts the gangs of other namespaces that come before
	// it, by priority, highest first: their names are not shown.
	AheadElsewhere []QueuedCount
}

// QueuedCount counts gangs of one priority.
type QueuedCount struct {
	// Priority is the gangs' priority.
	Priority int32
	// Gangs is how many gangs there are.
	Gangs int32
	// Pods is how many pods they ask room for.
	Pods int32
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PendingPodGroup is one gang in Muster's admission queue, as the leader's
// queue holds it when it is read. It is read-only and never stored: its
// name and namespace are the PodGroup's.
type PendingPodGroup struct {
	metav1.TypeMeta
	// Standard object metadata: the PodGroup's name, namespace, UID and
	// creation time.
	metav1.ObjectMeta

	// Queue is where the gang stands in admission order.
	Queue QueuePosition
	// Priority is the gang's priority, as admission orders it.
	Priority int32
	// Pods is how many of its pods wait at the gate; MinCount how many must
	// be placed at once (0: the group is admitted, and its pods join it as
	// they fit).
	Pods     int32
	MinCount int32
	// Needs is what the waiting pods request, summed: the room it waits for.
	Needs corev1.ResourceList
	// Reason and Message say why it waits, as its Admitted condition does.
	Reason  string
	Message string
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PendingPodGroupList is the admission queue, in admission order.
type PendingPodGroupList struct {
	metav1.TypeMeta
	// Standard list metadata.
	metav1.ListMeta

	// Items are the waiting gangs, first to be admitted first.
	Items []PendingPodGroup
}

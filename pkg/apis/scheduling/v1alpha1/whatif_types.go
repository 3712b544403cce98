package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// +genclient
// +genclient:onlyVerbs=create
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WhatIfReview asks what Muster's admission would decide for a gang if it
// were submitted now, without submitting it. Like SubjectAccessReview it
// can only be created, and is never stored: the answer comes back in
// status. It writes nothing, reserves nothing and records no event.
type WhatIfReview struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata. The namespace is the one the workload would
	// be submitted to.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the workload to ask about.
	Spec WhatIfReviewSpec `json:"spec"`

	// Status is the answer, filled in by the server.
	// +optional
	Status WhatIfReviewStatus `json:"status,omitempty"`
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
	// +optional
	Object runtime.RawExtension `json:"object,omitempty"`

	// PodGroup is the group the pods would form, when it would be created
	// beside them. Without it the group is the one that stands under the
	// pods' group name, or else the one the controller would create: from
	// the pods' annotations, or sized by the object. It is required when
	// object is empty.
	// +optional
	PodGroup *PodGroup `json:"podGroup,omitempty"`
}

// WhatIfReviewStatus is what admission would decide, on the cluster as it
// is when the review is answered.
type WhatIfReviewStatus struct {
	// PodGroup is the name of the group the pods would form.
	PodGroup string `json:"podGroup"`
	// MinCount is how many of its pods must be placed at once.
	MinCount int32 `json:"minCount"`
	// Pods is how many pods the workload would create.
	Pods int32 `json:"pods"`
	// Priority is the gang's priority, as admission orders it.
	Priority int32 `json:"priority"`

	// Admitted says that admission would admit the gang now.
	Admitted bool `json:"admitted"`
	// Reason and Message are what the group's Admitted condition would
	// say: why it waits, or that it would preempt.
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`

	// Placements are where admission would put each pod, in the order of
	// the workload's pods. Set when the gang would be admitted, or would
	// preempt to fit.
	// +optional
	// +listType=atomic
	Placements []WhatIfPlacement `json:"placements,omitempty"`
	// Domain is the topology domain the gang would be placed in, when its
	// group asks for one.
	// +optional
	Domain string `json:"domain,omitempty"`

	// Preemptions are the gangs whose pods admission would preempt to make
	// room, each named only where the caller may get pods in its
	// namespace.
	// +optional
	// +listType=atomic
	Preemptions []WhatIfPreemption `json:"preemptions,omitempty"`

	// Autoscaler is what Muster would ask of the cluster autoscaler for the
	// gang, when it would ask.
	// +optional
	Autoscaler *WhatIfAutoscaler `json:"autoscaler,omitempty"`

	// Queue is where the gang would stand in admission order.
	Queue QueuePosition `json:"queue"`
}

// WhatIfPlacement is where one pod would go.
type WhatIfPlacement struct {
	// Pod names the pod as the workload's controller would name it, or
	// by its index when the name is generated.
	Pod string `json:"pod"`
	// Node is the node admission would pin it to.
	Node string `json:"node"`
}

// WhatIfPreemption is one gang admission would preempt.
type WhatIfPreemption struct {
	// Namespace and PodGroup name the victim's group. They are empty when
	// the caller may not get pods in that namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	PodGroup string `json:"podGroup,omitempty"`
	// Pods is how many of its pods would be evicted.
	Pods int32 `json:"pods"`
	// Priority is the victim's priority.
	Priority int32 `json:"priority"`
}

// WhatIfAutoscaler is what Muster would ask of the autoscaler.
type WhatIfAutoscaler struct {
	// Ask says that Muster would ask for nodes for the gang.
	Ask bool `json:"ask"`
	// Pods is how many of the gang's pods the request would ask room for.
	// +optional
	Pods int32 `json:"pods,omitempty"`
	// Message says what would be asked, or why nothing would be.
	// +optional
	Message string `json:"message,omitempty"`
}

// QueuePosition is where a gang stands in Muster's admission order, as far
// as its own namespace may see.
type QueuePosition struct {
	// Position is the gang's place in admission order, from 1, among all
	// the gangs that wait in the cluster.
	Position int32 `json:"position"`
	// Waiting is how many gangs wait in the cluster, this one included.
	Waiting int32 `json:"waiting"`
	// Ahead names the gangs of the same namespace that come before it, in
	// admission order.
	// +optional
	// +listType=atomic
	Ahead []string `json:"ahead,omitempty"`
	// AheadElsewhere counts the gangs of other namespaces that come before
	// it, by priority, highest first: their names are not shown.
	// +optional
	// +listType=atomic
	AheadElsewhere []QueuedCount `json:"aheadElsewhere,omitempty"`
}

// QueuedCount counts gangs of one priority.
type QueuedCount struct {
	// Priority is the gangs' priority.
	Priority int32 `json:"priority"`
	// Gangs is how many gangs there are.
	Gangs int32 `json:"gangs"`
	// Pods is how many pods they ask room for.
	Pods int32 `json:"pods"`
}

// +genclient
// +genclient:onlyVerbs=get,list
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PendingPodGroup is one gang in Muster's admission queue, as the leader's
// queue holds it when it is read. It is read-only and never stored: its
// name and namespace are the PodGroup's.
type PendingPodGroup struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata: the PodGroup's name, namespace, UID and
	// creation time.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Queue is where the gang stands in admission order.
	Queue QueuePosition `json:"queue"`
	// Priority is the gang's priority, as admission orders it.
	Priority int32 `json:"priority"`
	// Pods is how many of its pods wait at the gate; MinCount how many must
	// be placed at once (0: the group is admitted, and its pods join it as
	// they fit).
	Pods     int32 `json:"pods"`
	MinCount int32 `json:"minCount"`
	// Needs is what the waiting pods request, summed: the room it waits for.
	// +optional
	Needs corev1.ResourceList `json:"needs,omitempty"`
	// Reason and Message say why it waits, as its Admitted condition does.
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PendingPodGroupList is the admission queue, in admission order.
type PendingPodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the waiting gangs, first to be admitted first.
	Items []PendingPodGroup `json:"items"`
}

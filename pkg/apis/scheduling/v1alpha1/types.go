package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Workload is a gang-scheduling policy: a set of pod-group templates that
// PodGroups are created from.
type Workload struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the policy.
	Spec WorkloadSpec `json:"spec"`

	// Status is what the controller has observed of this Workload.
	// +optional
	Status WorkloadStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WorkloadList is a list of Workloads.
type WorkloadList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items is the list of Workloads.
	Items []Workload `json:"items"`
}

// WorkloadSpec is the desired policy of a Workload.
type WorkloadSpec struct {
	// ControllerRef names the object that manages this Workload, such as a
	// training job. It is optional and immutable once set.
	// +optional
	ControllerRef *TypedLocalObjectReference `json:"controllerRef,omitempty"`

	// PodGroupTemplates are the kinds of PodGroup that make up the workload:
	// 1 to 8 entries with unique names. After creation no entry can be added or
	// removed, and only an entry's schedulingPolicy may change.
	// +listType=map
	// +listMapKey=name
	PodGroupTemplates []PodGroupTemplate `json:"podGroupTemplates"`
}

// TypedLocalObjectReference points at an object in the same namespace.
type TypedLocalObjectReference struct {
	// APIGroup is the group of the referenced object; empty for the core group.
	// +optional
	APIGroup string `json:"apiGroup,omitempty"`
	// Kind is the kind of the referenced object.
	Kind string `json:"kind"`
	// Name is the name of the referenced object.
	Name string `json:"name"`
}

// PodGroupTemplate describes one kind of PodGroup of a Workload.
type PodGroupTemplate struct {
	// Name identifies the template within the Workload. It is a DNS label.
	Name string `json:"name"`

	// SchedulingPolicy is copied into PodGroups created from this template.
	// It may change after creation.
	SchedulingPolicy PodGroupSchedulingPolicy `json:"schedulingPolicy"`

	// Priority may lower the group's priority below what its pods'
	// PriorityClass gives them, never raise it. A group's priority is the
	// lowest spec.priority among its pods (which kube-apiserver's Priority
	// admission sets from spec.priorityClassName), or this value if it is
	// lower. It orders admission (higher first) and decides whom a gang
	// may preempt (strictly lower only).
	// +optional
	Priority *int32 `json:"priority,omitempty"`

	// Roles split the gang into pods of different shapes (KEP-976): at most
	// 8, each named by a DNS label that the role's pods carry in the label
	// scheduling.muster.dev/role. When set, schedulingPolicy must be a gang
	// whose minCount is the sum of the counts, and the gang is complete when
	// every role has its count of active pods. After creation only the counts
	// may change, as minCount may.
	// +optional
	// +listType=map
	// +listMapKey=name
	Roles []PodGroupRole `json:"roles,omitempty"`

	// SchedulingConstraints are copied into PodGroups created from this
	// template. They cannot change after creation.
	// +optional
	SchedulingConstraints *PodGroupSchedulingConstraints `json:"schedulingConstraints,omitempty"`
}

// PodGroupRole is one shape of pod in a gang of several shapes.
type PodGroupRole struct {
	// Name identifies the role; a DNS label.
	Name string `json:"name"`
	// Count is how many active pods of this role the gang needs; at least 1.
	Count int32 `json:"count"`
	// Template gives what capacity-aware admission needs to know of the
	// role's pods before they exist. Required when createdLater is true.
	// +optional
	Template *PodGroupRoleTemplate `json:"template,omitempty"`
	// CreatedLater marks a role whose pods are created by another pod of the
	// group once that one runs, such as Spark executors created by the
	// driver: the gang is admitted with capacity reserved for them.
	// +optional
	CreatedLater bool `json:"createdLater,omitempty"`
	// ReservationTimeoutSeconds is how long, from the group's admission, the
	// capacity reserved for this createdLater role's pods waits for them;
	// what is still unclaimed then is given back, and the group's
	// CapacityReserved condition says so. When unset, the controller's
	// --reservation-timeout applies. Only for createdLater roles.
	// +optional
	ReservationTimeoutSeconds *int32 `json:"reservationTimeoutSeconds,omitempty"`
	// SchedulingConstraints place the role's pods, within the group's
	// domain, in one domain of a narrower level (topology, or
	// preferredTopology), or in slices. They cannot change after creation.
	// +optional
	SchedulingConstraints *PodGroupSchedulingConstraints `json:"schedulingConstraints,omitempty"`
}

// PodGroupSchedulingConstraints say which nodes a group's pods must, or
// would rather, share. A level of the topology is a node label key, such
// as topology.kubernetes.io/zone or kubernetes.io/hostname; a domain of
// it is the set of nodes whose label has one value. Nodes without the
// label are in no domain of that level.
type PodGroupSchedulingConstraints struct {
	// Topology is upstream's field (scheduling.k8s.io/v1beta1 PodGroup):
	// at most one entry, and it is required: every pod of the group is
	// placed in one domain of its key, and the group waits whole while no
	// domain has room for all of it.
	// +optional
	// +listType=atomic
	Topology []TopologyConstraint `json:"topology,omitempty"`
	// PreferredTopology is Muster's extension: up to 4 levels, narrowest
	// first, each different from topology's. The group is placed in one
	// domain of the first level that has a domain with room for all of it;
	// failing every one, in one domain of topology's key, or anywhere when
	// topology is empty. Each preferred level should be narrower than
	// topology's: a domain of it that straddles two of topology's domains
	// is used only within one of them.
	// +optional
	// +listType=atomic
	PreferredTopology []TopologyConstraint `json:"preferredTopology,omitempty"`
	// Slice is Muster's extension: the group's pods, taken in order of
	// name (numbers by value: worker-2 before worker-10), are cut into
	// slices of slice.size, and each slice is placed in one domain of
	// slice.key within the group's domain (the last slice may be smaller).
	// Pods of roles created later are sliced after the existing ones.
	// +optional
	Slice *TopologySlice `json:"slice,omitempty"`
}

// TopologyConstraint names a level of the topology.
type TopologyConstraint struct {
	// Key is a node label key, such as topology.kubernetes.io/zone: the
	// nodes that share its value are one domain.
	Key string `json:"key"`
}

// TopologySlice asks that every Size pods share one domain of Key.
type TopologySlice struct {
	// Key is a node label key, narrower than the group's level, such as
	// a rack label.
	Key string `json:"key"`
	// Size is how many pods share one domain of Key; at least 1.
	Size int32 `json:"size"`
}

// TopologyDomain is one domain of a level: the nodes whose label Key has
// the value Value.
type TopologyDomain struct {
	// Key is the node label key.
	Key string `json:"key"`
	// Value is the label's value shared by the domain's nodes.
	Value string `json:"value"`
}

// PodGroupRoleTemplate holds the fields of a pod that decide where it fits.
type PodGroupRoleTemplate struct {
	// Requests are the resources one pod of the role requests, as
	// the sum of its containers' requests.
	// +optional
	Requests corev1.ResourceList `json:"requests,omitempty"`
	// NodeSelector is the pods' spec.nodeSelector.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// NodeAffinity is the pods' spec.affinity.nodeAffinity.
	// +optional
	NodeAffinity *corev1.NodeAffinity `json:"nodeAffinity,omitempty"`
	// Tolerations are the pods' spec.tolerations.
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// PodGroupSchedulingPolicy says how a group is admitted. Exactly one of its
// members must be set.
// +union
type PodGroupSchedulingPolicy struct {
	// Basic admits every pod of the group on its own, with no gang.
	// +optional
	// +unionMember
	Basic *BasicSchedulingPolicy `json:"basic,omitempty"`

	// Gang admits the group once at least minCount of its pods exist, all at once.
	// +optional
	// +unionMember
	Gang *GangSchedulingPolicy `json:"gang,omitempty"`
}

// BasicSchedulingPolicy admits each pod on its own.
type BasicSchedulingPolicy struct{}

// GangSchedulingPolicy admits the group once MinCount pods are present.
type GangSchedulingPolicy struct {
	// MinCount is how many pods must exist before any of them is admitted.
	// It is at least 1 and may change, so that a job can scale.
	MinCount int32 `json:"minCount"`
}

// WorkloadStatus is what the controller has observed of a Workload.
type WorkloadStatus struct {
	// Conditions are the latest observations of the Workload's state.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// ObservedGeneration is the generation the controller last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodGroup is one runtime group of pods, admitted as a whole: none of its pods
// is released to the scheduler until the gang is complete.
type PodGroup struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the group.
	Spec PodGroupSpec `json:"spec"`

	// Status is the observed state of the group, written by the controller.
	// +optional
	Status PodGroupStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodGroupList is a list of PodGroups.
type PodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	// Standard list metadata.
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items is the list of PodGroups.
	Items []PodGroup `json:"items"`
}

// PodGroupSpec is the desired state of a PodGroup.
type PodGroupSpec struct {
	// WorkloadRef names the Workload and template this group was created from.
	// It is optional and immutable. When it is set and schedulingPolicy is
	// empty, the server copies the template's policy on create.
	// +optional
	WorkloadRef *WorkloadReference `json:"workloadRef,omitempty"`

	// SchedulingPolicy says how the group is admitted. It is required once
	// defaulting has run; gang.minCount may change after creation.
	// +optional
	SchedulingPolicy PodGroupSchedulingPolicy `json:"schedulingPolicy"`

	// SchedulingGates hold the whole group back: while any remains, the group
	// is never admitted. They follow the rules of Pod scheduling gates: they can
	// be set only at creation and afterwards only removed, in any order.
	// Names are qualified names and unique.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +patchStrategy=merge
	// +patchMergeKey=name
	SchedulingGates []PodGroupSchedulingGate `json:"schedulingGates,omitempty" patchStrategy:"merge" patchMergeKey:"name"`

	// Priority may lower the group's priority below what its pods'
	// PriorityClass gives them, never raise it. A group's priority is the
	// lowest spec.priority among its pods (which kube-apiserver's Priority
	// admission sets from spec.priorityClassName), or this value if it is
	// lower. It orders admission (higher first) and decides whom a gang
	// may preempt (strictly lower only).
	// +optional
	Priority *int32 `json:"priority,omitempty"`

	// Roles split the gang into pods of different shapes (KEP-976): at most
	// 8, each named by a DNS label that the role's pods carry in the label
	// scheduling.muster.dev/role. When set, schedulingPolicy must be a gang
	// whose minCount is the sum of the counts, and the gang is complete when
	// every role has its count of active pods. After creation only the counts
	// may change, as minCount may.
	// +optional
	// +listType=map
	// +listMapKey=name
	Roles []PodGroupRole `json:"roles,omitempty"`

	// SchedulingConstraints say which nodes the group's pods must, or would
	// rather, share: one rack, block or zone (topology, as upstream's
	// scheduling.k8s.io/v1beta1 PodGroup names it), narrower levels tried
	// first (preferredTopology), and slices. When workloadRef is set and
	// this is empty, the server copies the template's on create. It cannot
	// change after creation.
	// +optional
	SchedulingConstraints *PodGroupSchedulingConstraints `json:"schedulingConstraints,omitempty"`
}

// WorkloadReference names a Workload and one of its templates.
type WorkloadReference struct {
	// WorkloadName is the name of a Workload in the PodGroup's namespace.
	WorkloadName string `json:"workloadName"`
	// TemplateName is the name of one of that Workload's podGroupTemplates.
	TemplateName string `json:"templateName"`
}

// PodGroupSchedulingGate holds the whole group back while it is present.
type PodGroupSchedulingGate struct {
	// Name of the gate, a qualified name such as example.com/approval.
	Name string `json:"name"`
}

// PodGroupPhase is a summary of a PodGroup's lifecycle.
// +enum
type PodGroupPhase string

// The phases of a PodGroup.
const (
	// PodGroupPending: the group waits for enough pods.
	PodGroupPending PodGroupPhase = "Pending"
	// PodGroupGated: group-level scheduling gates hold the group.
	PodGroupGated PodGroupPhase = "Gated"
	// PodGroupAdmitted: the gang was released to the scheduler.
	PodGroupAdmitted PodGroupPhase = "Admitted"
	// PodGroupRunning: at least minCount pods were bound to nodes.
	PodGroupRunning PodGroupPhase = "Running"
	// PodGroupSucceeded: the group finished with at least minCount pods succeeded.
	PodGroupSucceeded PodGroupPhase = "Succeeded"
	// PodGroupFailed: the group finished without enough pods succeeding.
	PodGroupFailed PodGroupPhase = "Failed"
)

// The condition types of a PodGroup.
const (
	// ConditionAdmitted is True once the controller has admitted the gang. It
	// is written before the admission gates come off the group's pods, so that
	// a crash in between is finished by the next sync: while it is True some
	// pods may still be gated.
	ConditionAdmitted = "Admitted"
	// ConditionScheduled is True once at least minCount pods were bound to nodes. Once True it stays True.
	ConditionScheduled = "Scheduled"
	// ConditionFinished is True once no pod is active; its reason is ReasonSucceeded or ReasonFailed.
	ConditionFinished = "Finished"
	// ConditionStalled is True while a released pod stays unschedulable on
	// the node capacity-aware admission reserved for it, past the controller's
	// --stalled-pod-timeout: a pod Muster does not manage took that capacity.
	ConditionStalled = "Stalled"
	// ConditionRoleMismatch is True while some of the group's pods name a
	// role, a number of roles or a role count that disagrees with
	// spec.roles; each such pod also gets a RolesMismatch event.
	ConditionRoleMismatch = "RoleMismatch"
	// ConditionCapacityReserved is True while capacity-aware admission holds
	// capacity (status.reservations) for pods of createdLater roles that do
	// not exist yet. It goes False with reason AllClaimed once every
	// reservation was taken by an arriving pod, or ReservationExpired once
	// what was left unclaimed past the role's timeout was given back.
	ConditionCapacityReserved = "CapacityReserved"
	// ConditionPreempted is True once Muster preempted the group for a gang
	// of higher priority, which its message names: its pods that were
	// released are evicted, and the group waits whole again, as for any
	// gang, not admitted. It goes False (reason Readmitted) once the group
	// is admitted again.
	ConditionPreempted = "Preempted"
	// ConditionCountsRecovered is True once the controller found pods it
	// had counted for this group that the group's status did not count, as
	// after a restore of Muster's etcd from an older snapshot: the counts
	// were raised to the counted pods that still exist, and its message
	// says by how many. Pods counted and deleted since cannot be counted
	// again, so the counts are a lower bound and the group is never
	// judged Failed for being short. It stays True.
	ConditionCountsRecovered = "CountsRecovered"
)

// Reasons of the Finished condition.
const (
	ReasonSucceeded = "Succeeded"
	ReasonFailed    = "Failed"
)

// PodGroupStatus is the observed state of a PodGroup.
type PodGroupStatus struct {
	// Conditions are Admitted, Scheduled and Finished.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// Phase summarises the conditions for kubectl. The server derives it from
	// the spec and the conditions; a value written by a client is replaced.
	// +optional
	Phase PodGroupPhase `json:"phase,omitempty"`

	// Pods is the number of existing pods that carry the group's label.
	// +optional
	Pods int32 `json:"pods,omitempty"`
	// Gated is the number of those pods still held by the admission gate.
	// +optional
	Gated int32 `json:"gated,omitempty"`
	// Active is the number of pods that are neither terminal nor being deleted.
	// +optional
	Active int32 `json:"active,omitempty"`
	// Scheduled is the number of pods bound to a node.
	// +optional
	Scheduled int32 `json:"scheduled,omitempty"`
	// Ready is the number of pods with the Ready condition.
	// +optional
	Ready int32 `json:"ready,omitempty"`
	// Succeeded is the number of pods that ended successfully, counted exactly
	// once each, including pods that have since been deleted.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// Failed is the number of pods that ended in failure or were deleted while
	// running, counted exactly once each.
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// Preempted is how many of the failed pods failed because they were
	// preempted for pods of higher priority: by Muster, for a gang (the pod
	// carries the condition DisruptionTarget with reason
	// PreemptionByMuster), or by kube-scheduler (reason
	// PreemptionByScheduler), after which Muster preempts the rest of the
	// gang. Counted exactly once each, in the same write that counts them
	// in failed.
	// +optional
	Preempted int32 `json:"preempted,omitempty"`

	// UncountedTerminatedPods holds the UIDs of finished pods whose tracking
	// finalizer the controller is removing and that are not yet in the
	// counters (KEP-2307). Each list holds at most 500 UIDs.
	// +optional
	UncountedTerminatedPods *UncountedTerminatedPods `json:"uncountedTerminatedPods,omitempty"`

	// Placements are the nodes that capacity-aware admission reserved for
	// the group's pods that are not released yet. Each is written before the
	// pod is pinned to its node and released, so that a controller that
	// restarts in between carries out the same placement, and its capacity
	// stays reserved meanwhile. An entry goes once its pod is released.
	// +optional
	// +listType=map
	// +listMapKey=uid
	Placements []PodPlacement `json:"placements,omitempty"`

	// Preemption is the preemption Muster decided so that this group fits:
	// the lower-priority groups (and, with --preempt-unmanaged, pods) it
	// evicts whole. It is written before any victim is marked or any of
	// its pods is touched, so that a new leader finishes the same
	// preemption and never starts a second one for the group; it is
	// cleared in the write that admits the group.
	// +optional
	Preemption *PodGroupPreemption `json:"preemption,omitempty"`

	// Reservations are the nodes that capacity-aware admission reserved for
	// pods of createdLater roles that do not exist yet, written in the same
	// write as Admitted=True. A pod of the role that arrives takes one: its
	// placement is recorded on that node in the same write that shrinks the
	// reservation, and it is pinned and released at once. What is unclaimed
	// past the role's reservation timeout is given back.
	// +optional
	// +listType=map
	// +listMapKey=role
	// +listMapKey=node
	Reservations []RoleReservation `json:"reservations,omitempty"`

	// Roles count the pods of each of spec.roles, as active, succeeded and
	// failed count all of the group's pods.
	// +optional
	// +listType=map
	// +listMapKey=name
	Roles []PodGroupRoleStatus `json:"roles,omitempty"`

	// TopologyDomain is the domain capacity-aware admission placed the group
	// in, when spec.schedulingConstraints asks for one: pods that join the
	// group later are placed in it too. Written with Admitted=True.
	// +optional
	TopologyDomain *TopologyDomain `json:"topologyDomain,omitempty"`

	// AdmissionTime is when the group was admitted.
	// +optional
	AdmissionTime *metav1.Time `json:"admissionTime,omitempty"`
	// StartTime is when the group was first scheduled.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// CompletionTime is when the group finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// ObservedGeneration is the generation the controller last acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// PodPlacement is the node that capacity-aware admission chose for one pod.
type PodPlacement struct {
	// Pod is the pod's name.
	Pod string `json:"pod"`
	// UID is the pod's UID: a new pod of the same name is placed anew.
	UID types.UID `json:"uid"`
	// Node is the name of the node the pod is pinned to when it is released.
	Node string `json:"node"`
}

// RoleReservation is capacity held on one node for pods of a createdLater
// role that do not exist yet.
type RoleReservation struct {
	// Role is the name of a createdLater role of spec.roles.
	Role string `json:"role"`
	// Node is the node the capacity is held on.
	Node string `json:"node"`
	// Count is how many of the role's pods, each as the role's template
	// requests, the node holds room for; at least 1.
	Count int32 `json:"count"`
}

// PodGroupRoleStatus counts the pods of one role.
type PodGroupRoleStatus struct {
	// Name is the role's name.
	Name string `json:"name"`
	// Active is the number of the role's pods that are neither terminal nor being deleted.
	// +optional
	Active int32 `json:"active,omitempty"`
	// Succeeded is the number of the role's pods that ended successfully, counted once each.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`
	// Failed is the number of the role's pods that failed, counted once each.
	// +optional
	Failed int32 `json:"failed,omitempty"`
	// UncountedTerminatedPods are the UIDs of status.uncountedTerminatedPods
	// that are this role's pods: a pod is counted in its role in the same
	// write that counts it in the group, even when the pod is gone by then.
	// +optional
	UncountedTerminatedPods *UncountedTerminatedPods `json:"uncountedTerminatedPods,omitempty"`
	// TopologyDomain is the domain the role's pods were placed in, when the
	// role's schedulingConstraints ask for one.
	// +optional
	TopologyDomain *TopologyDomain `json:"topologyDomain,omitempty"`
}

// UncountedTerminatedPods holds the UIDs of finished pods that are not yet
// in the counters.
type UncountedTerminatedPods struct {
	// Succeeded holds UIDs of succeeded pods.
	// +optional
	// +listType=set
	Succeeded []types.UID `json:"succeeded,omitempty"`
	// Failed holds UIDs of failed pods.
	// +optional
	// +listType=set
	Failed []types.UID `json:"failed,omitempty"`
	// Preempted holds the UIDs of failed that Muster preempted: each is
	// counted in preempted too when it is counted in failed.
	// +optional
	// +listType=set
	Preempted []types.UID `json:"preempted,omitempty"`
}

// PodGroupPreemption is a preemption that Muster decided for a group.
type PodGroupPreemption struct {
	// Time is when it was decided.
	Time metav1.Time `json:"time"`
	// Priority is the group's priority when it was decided.
	Priority int32 `json:"priority"`
	// Victims are what it evicts, each whole.
	// +listType=atomic
	Victims []PreemptionVictim `json:"victims"`
}

// PreemptionVictim is one group, or one pod that Muster does not manage,
// that a preemption evicts.
type PreemptionVictim struct {
	// Kind is PodGroup or Pod.
	Kind string `json:"kind"`
	// Namespace is the victim's namespace, when it is the group's own; a
	// victim in another namespace is named by ref alone.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name is the victim's name, when it is in the group's namespace.
	// +optional
	Name string `json:"name,omitempty"`
	// UID is the victim's UID, when it is in the group's namespace: a new
	// object of the same name is not a victim.
	// +optional
	UID types.UID `json:"uid,omitempty"`
	// Ref stands for a victim in another namespace, in place of its
	// namespace, name and UID, which whoever may read this group need not
	// be allowed to see: "sha256:" and the hexadecimal SHA-256 of the
	// victim's UID. Muster's controller finds the victim by it; no one can
	// tell the victim from it.
	// +optional
	Ref string `json:"ref,omitempty"`
	// Priority is the victim's priority when it was chosen.
	Priority int32 `json:"priority"`
	// Pods is how many of its pods held capacity when it was chosen.
	// +optional
	Pods int32 `json:"pods,omitempty"`
}

// The kinds of a PreemptionVictim.
const (
	VictimKindPodGroup = "PodGroup"
	VictimKindPod      = "Pod"
)

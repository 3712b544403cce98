package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Workload is a gang-scheduling policy: a set of pod-group templates that
// PodGroups are created from.
type Workload struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec   WorkloadSpec
	Status WorkloadStatus
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// WorkloadList is a list of Workloads.
type WorkloadList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []Workload
}

// WorkloadSpec is the desired policy of a Workload.
type WorkloadSpec struct {
	// ControllerRef names the object that owns this Workload. Immutable once set.
	ControllerRef *TypedLocalObjectReference
	// PodGroupTemplates are the groups that make up the workload.
	PodGroupTemplates []PodGroupTemplate
}

// TypedLocalObjectReference points at an object in the same namespace.
type TypedLocalObjectReference struct {
	APIGroup string
	Kind     string
	Name     string
}

// PodGroupTemplate describes one kind of PodGroup of a Workload.
type PodGroupTemplate struct {
	Name             string
	SchedulingPolicy PodGroupSchedulingPolicy
	Priority         *int32
	Roles            []PodGroupRole
	// SchedulingConstraints are copied into PodGroups created from this
	// template.
	SchedulingConstraints *PodGroupSchedulingConstraints
}

// PodGroupRole is one shape of pod in a gang of several shapes (KEP-976
// story 3): its pods carry RoleLabel with the role's name.
type PodGroupRole struct {
	Name  string
	Count int32
	// Template gives what capacity-aware admission needs of the role's pods
	// when they do not exist yet. Required when CreatedLater is set.
	Template *PodGroupRoleTemplate
	// CreatedLater marks a role whose pods another pod of the group (the
	// driver) creates once it runs (KEP-976 story 4).
	CreatedLater bool
	// ReservationTimeoutSeconds bounds how long capacity reserved for a
	// createdLater role waits for its pods, from admission.
	ReservationTimeoutSeconds *int32
	// SchedulingConstraints place the role's pods within the group's
	// topology domain: in one domain of a narrower level, or in slices.
	SchedulingConstraints *PodGroupSchedulingConstraints
}

// PodGroupSchedulingConstraints say which nodes a group's pods must, or
// would rather, share (topology.go).
type PodGroupSchedulingConstraints struct {
	// Topology is upstream's (scheduling.k8s.io/v1beta1): at most one
	// entry, required: every pod in one domain of its key.
	Topology []TopologyConstraint
	// PreferredTopology are narrower levels, narrowest first, tried before
	// Topology's (Muster's extension).
	PreferredTopology []TopologyConstraint
	// Slice puts every Size pods in one domain of Key within the group's
	// domain (Muster's extension).
	Slice *TopologySlice
}

// TopologyConstraint names a level of the topology: a node label key whose
// values are its domains.
type TopologyConstraint struct {
	Key string
}

// TopologySlice is a slice constraint: every Size pods share a domain of Key.
type TopologySlice struct {
	Key  string
	Size int32
}

// TopologyDomain is one domain of a level: the nodes whose label Key has
// the value Value.
type TopologyDomain struct {
	Key   string
	Value string
}

// PodGroupRoleTemplate holds the fields of a pod that decide where it fits.
type PodGroupRoleTemplate struct {
	Requests     corev1.ResourceList
	NodeSelector map[string]string
	NodeAffinity *corev1.NodeAffinity
	Tolerations  []corev1.Toleration
}

// PodGroupSchedulingPolicy is a union: exactly one member is set.
type PodGroupSchedulingPolicy struct {
	Basic *BasicSchedulingPolicy
	Gang  *GangSchedulingPolicy
}

// BasicSchedulingPolicy admits each pod on its own.
type BasicSchedulingPolicy struct{}

// GangSchedulingPolicy admits the group once MinCount pods are present.
type GangSchedulingPolicy struct {
	MinCount int32
}

// WorkloadStatus is what the controller has observed of a Workload.
type WorkloadStatus struct {
	Conditions         []metav1.Condition
	ObservedGeneration int64
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodGroup is one runtime group of pods that is admitted as a whole.
type PodGroup struct {
	metav1.TypeMeta
	metav1.ObjectMeta

	Spec   PodGroupSpec
	Status PodGroupStatus
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// PodGroupList is a list of PodGroups.
type PodGroupList struct {
	metav1.TypeMeta
	metav1.ListMeta

	Items []PodGroup
}

// PodGroupSpec is the desired state of a PodGroup.
type PodGroupSpec struct {
	WorkloadRef      *WorkloadReference
	SchedulingPolicy PodGroupSchedulingPolicy
	SchedulingGates  []PodGroupSchedulingGate
	Priority         *int32
	Roles            []PodGroupRole
	// SchedulingConstraints: immutable.
	SchedulingConstraints *PodGroupSchedulingConstraints
}

// WorkloadReference names a Workload and one of its templates.
type WorkloadReference struct {
	WorkloadName string
	TemplateName string
}

// PodGroupSchedulingGate holds the whole group back while it is present.
type PodGroupSchedulingGate struct {
	Name string
}

// PodGroupPhase is a summary of a PodGroup's lifecycle, derived by the server.
type PodGroupPhase string

// The phases of a PodGroup.
const (
	PodGroupPending   PodGroupPhase = "Pending"
	PodGroupGated     PodGroupPhase = "Gated"
	PodGroupAdmitted  PodGroupPhase = "Admitted"
	PodGroupRunning   PodGroupPhase = "Running"
	PodGroupSucceeded PodGroupPhase = "Succeeded"
	PodGroupFailed    PodGroupPhase = "Failed"
)

// The condition types of a PodGroup.
const (
	// ConditionAdmitted is True once the controller has admitted the gang. It
	// is written before the admission gates come off the group's pods, so that
	// a crash in between is finished by the next sync: while it is True some
	// pods may still be gated.
	ConditionAdmitted = "Admitted"
	// ConditionScheduled is True once at least minCount pods were bound to nodes. It stays True.
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
	// ConditionCapacityReserved is True while capacity is reserved for pods
	// of createdLater roles that do not exist yet, and False once every
	// reservation was claimed or given back.
	ConditionCapacityReserved = "CapacityReserved"
	// ConditionPreempted is True once Muster preempted the group for a gang
	// of higher priority: its released pods are evicted and it waits whole
	// again. It goes False once the group is admitted again.
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
	Conditions []metav1.Condition
	Phase      PodGroupPhase

	Pods      int32
	Gated     int32
	Active    int32
	Scheduled int32
	Ready     int32
	Succeeded int32
	Failed    int32
	Preempted int32

	UncountedTerminatedPods *UncountedTerminatedPods

	Placements []PodPlacement

	Preemption *PodGroupPreemption

	Reservations []RoleReservation

	Roles []PodGroupRoleStatus

	// TopologyDomain is the domain the group was admitted in, when
	// spec.schedulingConstraints asks for one.
	TopologyDomain *TopologyDomain

	AdmissionTime      *metav1.Time
	StartTime          *metav1.Time
	CompletionTime     *metav1.Time
	ObservedGeneration int64
}

// PodPlacement is the node that capacity-aware admission chose for one pod
// of the group, recorded before the pod is pinned and released.
type PodPlacement struct {
	Pod  string
	UID  types.UID
	Node string
}

// RoleReservation is capacity held on one node for Count pods of a
// createdLater role that do not exist yet.
type RoleReservation struct {
	Role  string
	Node  string
	Count int32
}

// PodGroupRoleStatus counts one role's pods as the group's totals count
// all of them.
type PodGroupRoleStatus struct {
	Name      string
	Active    int32
	Succeeded int32
	Failed    int32
	// UncountedTerminatedPods are the role's share of the group's, so that
	// a pod counted after it is gone is counted in its role.
	UncountedTerminatedPods *UncountedTerminatedPods
	// TopologyDomain is the domain the role's pods were admitted in, when
	// the role's schedulingConstraints ask for one.
	TopologyDomain *TopologyDomain
}

// UncountedTerminatedPods holds the UIDs of finished pods whose tracking
// finalizer is being removed and that are not yet in the counters.
type UncountedTerminatedPods struct {
	Succeeded []types.UID
	Failed    []types.UID
	// Preempted are the UIDs of Failed that Muster preempted.
	Preempted []types.UID
}

// PodGroupPreemption is a preemption decided for a group: what it evicts
// to fit, written before any victim is touched.
type PodGroupPreemption struct {
	Time     metav1.Time
	Priority int32
	Victims  []PreemptionVictim
}

// The kinds of a PreemptionVictim.
const (
	VictimKindPodGroup = "PodGroup"
	VictimKindPod      = "Pod"
)

// PreemptionVictim is one group, or one pod Muster does not manage, that a
// preemption evicts whole.
type PreemptionVictim struct {
	Kind      string
	Namespace string
	Name      string
	UID       types.UID
	Ref       string
	Priority  int32
	Pods      int32
}

package scheduling

import "fmt"

// Names shared by the server, the controller and the webhook. They are part of
// Muster's public contract and never change.
const (
	// PodGroupLabel on a pod names the PodGroup, in the pod's namespace, that the pod belongs to.
	PodGroupLabel = "scheduling.muster.dev/pod-group"
	// ManagedLabel marks pods that Muster's webhook has prepared for gang
	// admission. It is for users and tools; the controller does not read it.
	ManagedLabel = "scheduling.muster.dev/managed"
	// CountedLabel is put on a pod by the controller, in the patch that
	// takes its tracking finalizer off once its end is counted:
	// "<Succeeded|Failed>.<PodGroup UID>" (CountedValue). It lets the
	// controller see that a group's status lost counts it had written, as
	// a restore of Muster's etcd from an older snapshot does
	// (docs/etcd.md).
	CountedLabel = "scheduling.muster.dev/counted"
	// AdmissionGate is the pod scheduling gate that holds a pod until its gang is admitted.
	AdmissionGate = "scheduling.muster.dev/admission"
	// TrackingFinalizer keeps a finished pod around until the controller has counted it.
	TrackingFinalizer = "scheduling.muster.dev/tracking"
	// PodCleanupFinalizer is put on every PodGroup at creation so that the
	// controller can release the group's pods before the group goes away.
	PodCleanupFinalizer = "scheduling.muster.dev/pod-cleanup"
	// MinCountAnnotation on a pod asks the controller to create its PodGroup
	// with a gang policy of this minCount when the group does not exist.
	MinCountAnnotation = "scheduling.muster.dev/min-count"
	// TopologyRequiredAnnotation on a pod gives the PodGroup the controller
	// creates from it spec.schedulingConstraints.topology: a node label key,
	// one domain of which must hold the whole gang (topology.go).
	TopologyRequiredAnnotation = "scheduling.muster.dev/topology-required"
	// TopologyPreferredAnnotation gives that group
	// spec.schedulingConstraints.preferredTopology: node label keys,
	// comma-separated, narrowest first.
	TopologyPreferredAnnotation = "scheduling.muster.dev/topology-preferred"
	// TopologySliceKeyAnnotation and TopologySliceSizeAnnotation, set
	// together or not at all, give that group
	// spec.schedulingConstraints.slice: every slice-size pods in one domain
	// of the node label slice-key.
	TopologySliceKeyAnnotation  = "scheduling.muster.dev/topology-slice-key"
	TopologySliceSizeAnnotation = "scheduling.muster.dev/topology-slice-size"
	// WorkloadAnnotation on a pod asks the controller to create its PodGroup
	// with a workloadRef to this Workload (with TemplateAnnotation).
	WorkloadAnnotation = "scheduling.muster.dev/workload"
	// TemplateAnnotation names the Workload's pod-group template for WorkloadAnnotation.
	TemplateAnnotation = "scheduling.muster.dev/template"
	// GroupByAnnotation on a pod asks that each instance of its workload
	// form a group of its own: the mutating webhook names the pod's group
	// after the instance, from the labels this annotation lists, in place
	// of the group label's value (instance.go). Its value is
	// GroupByInstance or a comma-separated list of label keys.
	GroupByAnnotation = "scheduling.muster.dev/group-by"
	// RoleLabel on a pod names its role in a group with spec.roles.
	RoleLabel = "scheduling.muster.dev/role"
	// RoleCountAnnotation on a pod says how many pods its role has, for a
	// group the controller creates from pods; 1 when absent.
	RoleCountAnnotation = "scheduling.muster.dev/role-count"
	// RolesAnnotation on a pod says how many roles its group has; the
	// controller creates the group once it has seen a pod of each.
	RolesAnnotation = "scheduling.muster.dev/roles"
	// RolesTemplateAnnotation on a driver pod holds, as JSON, the roles whose
	// pods the driver creates later: a list of PodGroupRole.
	RolesTemplateAnnotation = "scheduling.muster.dev/roles-template"
)

// ControllerName names the embedded controller wherever it shows: its
// leader-election Lease, its field manager, its user agent and the source of
// its events.
const ControllerName = "muster-controller"

// DefaultServerNamespace is the namespace Muster runs in when $POD_NAMESPACE
// does not say otherwise.
const DefaultServerNamespace = "muster-system"

// DefaultNamespaceSelector picks the namespaces whose labelled pods Muster
// manages unless configured otherwise: all but kube-system and
// DefaultServerNamespace. It is the one source of the default: the
// controller's --namespace-selector, the webhooks' namespaceSelector
// (pods.DefaultNamespaceSelector) and the binding of the policy
// muster-pod-labels all start from it, wherever the server runs, and unit
// tests keep charts/muster equal to it. The chart sets all three from its
// excludedNamespaces; an operator who sets --namespace-selector by hand must
// set the same selector in the webhooks and the policy bindings.
var DefaultNamespaceSelector = NamespaceSelectorExcluding(DefaultServerNamespace)

// NamespaceSelectorExcluding is the default namespace selector, in label
// selector syntax, of a server running in serverNamespace: every namespace but
// kube-system and serverNamespace, so that neither the control plane nor
// Muster itself can be blocked by the webhook.
func NamespaceSelectorExcluding(serverNamespace string) string {
	return fmt.Sprintf("kubernetes.io/metadata.name notin (kube-system,%s)", serverNamespace)
}

// Limits of the API.
const (
	// MaxPodGroupTemplates is the most pod-group templates a Workload may hold.
	MaxPodGroupTemplates = 8
	// MaxRoles is the most roles a group may have, as KEP-976 allows.
	MaxRoles = 8
	// MaxUncountedTerminatedPods caps each list of status.uncountedTerminatedPods,
	// as KEP-2307 caps a Job's, so that a status write stays small.
	MaxUncountedTerminatedPods = 500
	// MaxPreemptionVictims caps status.preemption.victims: a gang that
	// would need more victims than this to fit does not preempt.
	MaxPreemptionVictims = 100
	// MaxPreferredTopology caps schedulingConstraints.preferredTopology:
	// each level is tried in turn for every placement of the gang, and
	// clusters have few levels narrower than a zone (block, rack, host).
	MaxPreferredTopology = 4
	// MaxGroupGates caps spec.schedulingGates, so that the conditions that
	// name the gates stay readable and within their size limit.
	MaxGroupGates = 32
	// MaxPlacements caps status.placements, so that a status write stays
	// under etcd's request size limit; a gang needs at most this many pods
	// placed at once.
	MaxPlacements = 5000
	// MaxRolePods is the most pods a group's roles may count in all, and so
	// any one role. Capacity-aware admission places a gang's pods, and
	// reserves places for those created later, all at once, and it never
	// places more than MaxPlacements pods at once, so a larger role could
	// never be admitted; the bound also caps the work that one
	// roles-template annotation asks of each admission cycle.
	MaxRolePods = MaxPlacements
	// MaxRoleTemplateBytes bounds the templates of one group's roles (or
	// one Workload template's), all together, as JSON: the controller keeps
	// every group's templates in memory, and builds placements from them
	// each admission cycle. It is the bound of the roles-template
	// annotation (MaxPodMusterAnnotationBytes), which holds the same
	// templates: 8 roles of several KiB each.
	MaxRoleTemplateBytes = 64 << 10
	// MaxReservationTimeoutSeconds caps a role's reservationTimeoutSeconds
	// at one hour, twelve times the controller's default
	// --reservation-timeout: a driver creates its workers once it runs,
	// within minutes, and capacity held longer for pods that do not exist
	// keeps other tenants' gangs waiting on idle nodes.
	MaxReservationTimeoutSeconds = 3600
	// MaxHeldPlacementSeconds is how long capacity-aware admission keeps the
	// placement of a pod that joined an admitted group but stays gated,
	// because the group has too few pods to release it with (two minutes). A
	// joiner that may go is released in the sync that places it, or the next
	// one if a patch failed, so only a held one lives this long; past it the
	// capacity is given back, and the group's pods are placed again only
	// once they change, so that a group kept short cannot hold capacity
	// ahead of every other gang.
	MaxHeldPlacementSeconds = 120
)

// SizedByAnnotation on a PodGroup that the controller created for a workload
// instance (GroupByAnnotation) names the owner whose spec gave its
// minCount, as "Kind name", when no pod annotation did.
const SizedByAnnotation = "scheduling.muster.dev/sized-by"

// CreatedFromPodAnnotation marks a PodGroup that the controller created from
// its pods' annotations (KEP-976), naming the pod it was created from. Only
// such a group is deleted once it has finished and has no pods left
// (--created-group-ttl).
const CreatedFromPodAnnotation = "scheduling.muster.dev/created-from-pod"

// Capacity requests: what Muster asks an autoscaler for, for a gang that
// does not fit the nodes there are (pkg/controller/autoscaling).
const (
	// CapacityRequestLabel marks a capacity-request pod, and names the
	// PodGroup, in the pod's namespace, whose room it asks for. Such a pod
	// never carries PodGroupLabel: it is never gated and never counted.
	CapacityRequestLabel = "scheduling.muster.dev/capacity-request"
	// CapacityRequestPriorityClass is the PriorityClass of capacity-request
	// pods: the lowest priority that cluster-autoscaler still scales up for
	// (its --expendable-pods-priority-cutoff is -10 by default, and pods
	// below it are ignored), with preemptionPolicy Never, so that a
	// capacity-request pod never preempts real work and any real pod may
	// preempt it.
	CapacityRequestPriorityClass = "muster-capacity-request"
	// CapacityRequestPriority is CapacityRequestPriorityClass's value.
	CapacityRequestPriority = -10
	// CapacityRequestContainer is the one container of a capacity-request pod.
	CapacityRequestContainer = "pause"
	// DefaultCapacityRequestImage is the image of that container
	// (--capacity-request-image); it never runs a workload.
	DefaultCapacityRequestImage = "registry.k8s.io/pause:3.10"
	// KarpenterDoNotDisrupt and ClusterAutoscalerSafeToEvict, both set on
	// every capacity-request pod, keep the node it holds from being
	// consolidated or scaled down while the gang waits for the rest.
	KarpenterDoNotDisrupt        = "karpenter.sh/do-not-disrupt"
	ClusterAutoscalerSafeToEvict = "cluster-autoscaler.kubernetes.io/safe-to-evict"
	// ProvisioningRequestClass is the class of the ProvisioningRequest a
	// waiting gang gets where autoscaling.x-k8s.io/v1 is served:
	// cluster-autoscaler's all-or-nothing scale-up.
	ProvisioningRequestClass = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
	// CapacityRequestHashAnnotation, on what a request creates, names the
	// demand it was made for (autoscaling.Demand.Hash): a gang whose pods
	// changed asks anew.
	CapacityRequestHashAnnotation = "scheduling.muster.dev/capacity-request-hash"
)

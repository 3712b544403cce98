package scheduling

// The reasons below are what the controller writes in a PodGroup's
// conditions and events. Clients match on them (kubectl wait, dashboards,
// alerts, `kubectl get events --field-selector reason=...`), so, like the
// names in names.go, they are part of Muster's public contract and never
// change. ReasonSucceeded and ReasonFailed, of the Finished condition, are
// with the types.

// Reasons of the Admitted condition.
const (
	// ReasonGangComplete: with --admission=count, the gang has the pods it
	// needs and is released whatever the free capacity.
	ReasonGangComplete = "GangComplete"
	// ReasonGangFits: with capacity-aware admission, the gang has the pods it
	// needs and an admission cycle placed them; each is pinned to its node.
	ReasonGangFits = "GangFits"
	// ReasonWaitingForPods: the gang has fewer pods than it needs, or some
	// role has fewer than its count.
	ReasonWaitingForPods = "WaitingForPods"
	// ReasonSchedulingGated: the group's spec.schedulingGates hold it.
	ReasonSchedulingGated = "SchedulingGated"
	// ReasonOrderedReadyStatefulSet: a StatefulSet that creates one pod at a
	// time controls the group's pods, so the gang can never form.
	ReasonOrderedReadyStatefulSet = "OrderedReadyStatefulSet"
	// ReasonInsufficientCapacity: the complete gang does not fit in the free
	// capacity now; it is admitted when it does.
	ReasonInsufficientCapacity = "InsufficientCapacity"
	// ReasonExceedsClusterCapacity: the gang does not fit even on the idle
	// cluster; it is skipped, so that it never blocks the queue.
	ReasonExceedsClusterCapacity = "ExceedsClusterCapacity"
	// ReasonReservationOverQuota: the places the gang would reserve for its
	// pods created later exceed what a ResourceQuota of its namespace has
	// left; it is admitted when the quota allows them.
	ReasonReservationOverQuota = "ReservationOverQuota"
	// ReasonQueued: under StrictFIFO, the gang waits behind the head of the
	// queue.
	ReasonQueued = "Queued"
	// ReasonWaitingForNodes: the gang does not fit the nodes there are, and
	// Muster asked an autoscaler for room for it (capacity-request pods or
	// a ProvisioningRequest); the message says how much of it exists.
	ReasonWaitingForNodes = "WaitingForNodes"
	// ReasonNodesNotProvisioned: the autoscaler did not provide room for
	// the whole gang within --capacity-request-timeout, or said it cannot;
	// the request was withdrawn, and is made again after a backoff.
	ReasonNodesNotProvisioned = "NodesNotProvisioned"
)

// Reasons of the Scheduled condition.
const (
	// ReasonMinCountBound: minCount of the group's pods were bound to nodes.
	ReasonMinCountBound = "MinCountBound"
	// ReasonOtherSchedulingGates: released pods are still held by another
	// tool's scheduling gates.
	ReasonOtherSchedulingGates = "OtherSchedulingGates"
)

// Reason of the Finished condition while it is False, beside ReasonSucceeded
// and ReasonFailed.
const (
	// ReasonWaitingForReplacement: no pod of the admitted group is active and
	// too few succeeded; it waits for a replacement pod (while a Job that
	// owns its pods runs, or for the controller's --release-grace) before it
	// fails.
	ReasonWaitingForReplacement = "WaitingForReplacement"
	// ReasonCountsIncomplete: no pod of the group is active and too few are
	// known to have succeeded, but its counts were recovered
	// (CountsRecovered): pods counted and deleted since cannot be counted
	// again, so the group is not judged.
	ReasonCountsIncomplete = "CountsIncomplete"
)

// Reasons of the CountsRecovered condition, and of the Admitted condition
// it restores.
const (
	// ReasonCountedPodsMissing: pods the controller had counted for this
	// group (CountedLabel) were missing from its counts.
	ReasonCountedPodsMissing = "CountedPodsMissing"
	// ReasonAdmittedBeforeRestore: the group was not admitted in its
	// status, but pods the controller counted for it show that it had
	// been; admission is never undone, so it is admitted again.
	ReasonAdmittedBeforeRestore = "AdmittedBeforeRestore"
)

// Reasons of the Stalled condition.
const (
	// ReasonReservedCapacityTaken: released, pinned pods stay unschedulable
	// on their reserved nodes, most likely because pods Muster does not
	// manage took that capacity.
	ReasonReservedCapacityTaken = "ReservedCapacityTaken"
	// ReasonNoStalledPods: no released pod is stuck on its reserved node.
	ReasonNoStalledPods = "NoStalledPods"
)

// Reasons of the CapacityReserved condition.
const (
	// ReasonAwaitingPods: capacity is held for pods of createdLater roles
	// that do not exist yet.
	ReasonAwaitingPods = "AwaitingPods"
	// ReasonAllClaimed: every reserved place was claimed by a pod of its role.
	ReasonAllClaimed = "AllClaimed"
	// ReasonReservationExpired: places still unclaimed past their role's
	// timeout were given back.
	ReasonReservationExpired = "ReservationExpired"
	// ReasonHeldPlacementsExpired: pods that joined the admitted group were
	// placed but stayed gated past MaxHeldPlacementSeconds, since the group
	// had too few pods to release them with; their capacity was given back.
	ReasonHeldPlacementsExpired = "HeldPlacementsExpired"
)

// Reasons of the RoleMismatch condition.
const (
	// ReasonPodsDisagree: some pods' role label or role annotations disagree
	// with spec.roles.
	ReasonPodsDisagree = "PodsDisagree"
	// ReasonPodsAgree: every pod agrees with spec.roles again.
	ReasonPodsAgree = "PodsAgree"
)

// Preemption (docs/controller.md, "Gang preemption").
const (
	// ReasonPreempting, of Admitted=False: the gang evicts lower-priority
	// gangs to fit, and is admitted once their pods are being deleted.
	ReasonPreempting = "Preempting"
	// ReasonPreemptionByMuster is the reason of Preempted=True on a victim
	// group, of its Admitted=False, and of the DisruptionTarget condition
	// that each of its evicted pods gets before it is deleted, as
	// kube-scheduler's own preemption writes PreemptionByScheduler.
	ReasonPreemptionByMuster = "PreemptionByMuster"
	// ReasonReadmitted, of Preempted=False: the preempted group was
	// admitted again.
	ReasonReadmitted = "Readmitted"
	// EventPreempting, on the preemptor: whom it preempts, and why.
	EventPreempting = "Preempting"
	// EventPreempted, on a victim group and on each evicted pod: who
	// preempted it.
	EventPreempted = "Preempted"
	// EventPartlyPreempted, on a group: kube-scheduler preempted one of its
	// pods for a pod that --complete-scheduler-preemption does not let
	// evict the whole gang, so the rest of it is left running.
	EventPartlyPreempted = "PartlyPreempted"
	// EventCapacityRequested, on a group: Muster asked an autoscaler for
	// room for the gang (capacity-request pods or a ProvisioningRequest).
	EventCapacityRequested = "CapacityRequested"
	// EventCapacityProvisioned, on a group: the autoscaler provided room
	// for the whole gang, or the gang fits while its request stands (new
	// nodes took it before the capacity-request pods were bound).
	EventCapacityProvisioned = "CapacityProvisioned"
	// EventCapacityRequestWithdrawn, on a group: its request was withdrawn
	// (timed out, or refused by the autoscaler) so that the autoscaler can
	// take back what it added.
	EventCapacityRequestWithdrawn = "CapacityRequestWithdrawn"
)

// Reasons of the controller's events, on PodGroups and on pods.
const (
	// EventAdmitted, on a group: it was admitted.
	EventAdmitted = "Admitted"
	// EventWaiting, on a group: why it is not admitted, once per reason.
	EventWaiting = "Waiting"
	// EventStalled, on a group: Stalled became True.
	EventStalled = "Stalled"
	// EventFinished, on a group: it finished.
	EventFinished = "Finished"
	// EventReservationExpired, on a group: reserved places were given back.
	EventReservationExpired = "ReservationExpired"
	// EventExpired, on a group created from pod annotations: it was deleted
	// once finished and empty for the controller's --created-group-ttl.
	EventExpired = "Expired"
	// EventWaitingForPodGroup, on a pod: its group does not exist yet.
	EventWaitingForPodGroup = "WaitingForPodGroup"
	// EventPodGroupCreated, on a pod: the controller created its group from
	// the pod's annotations.
	EventPodGroupCreated = "PodGroupCreated"
	// EventPodGroupNotCreated, a Warning on a pod: the controller does not
	// create its group, since the namespace holds
	// --max-podgroups-per-namespace PodGroups.
	EventPodGroupNotCreated = "PodGroupNotCreated"
	// EventPodGroupDeleted, on a pod: its group was deleted and the pod
	// released.
	EventPodGroupDeleted = "PodGroupDeleted"
	// EventMinCountMismatch, on a pod: its MinCountAnnotation disagrees with
	// its group's minCount.
	EventMinCountMismatch = "MinCountMismatch"
	// EventTopologyMismatch, on a pod: its topology annotations
	// (TopologyAnnotations) disagree with its group's
	// spec.schedulingConstraints.
	EventTopologyMismatch = "TopologyMismatch"
	// EventInvalidAnnotation, on a pod: one of Muster's annotations cannot be
	// parsed.
	EventInvalidAnnotation = "InvalidAnnotation"
	// EventPreviousInstance, on a PodGroup: it had finished, and the
	// controller deleted it because pods of a later instance of its
	// workload, of the same name, wait for a group of their own.
	EventPreviousInstance = "PreviousInstance"
	// EventPodGroupFinished, on a pod: it joined a finished group and stays
	// gated.
	EventPodGroupFinished = "PodGroupFinished"
	// EventWaitingForGang, on a pod: it stays gated until enough pods exist
	// to be released together.
	EventWaitingForGang = "WaitingForGang"
	// EventSyncPanicked, on a PodGroup: a sync of it panicked; the controller
	// recovered and retries it with backoff, and its pods stay as they were.
	EventSyncPanicked = "SyncPanicked"
	// EventOrderedReadyStatefulSet, on a StatefulSet's pod: the StatefulSet
	// can never form the group's gang.
	EventOrderedReadyStatefulSet = "OrderedReadyStatefulSet"
	// EventRolesMismatch, on a pod: its role annotations disagree with those
	// of the other pods of its group.
	EventRolesMismatch = "RolesMismatch"
)

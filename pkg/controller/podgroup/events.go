package podgroup

// Event reasons, on PodGroups and on pods.
const (
	reasonAdmitted           = "Admitted"
	reasonStalled            = "Stalled"
	reasonWaiting            = "Waiting"
	reasonFinished           = "Finished"
	reasonWaitingForPodGroup = "WaitingForPodGroup"
	reasonPodGroupCreated    = "PodGroupCreated"
	reasonPodGroupDeleted    = "PodGroupDeleted"
	reasonMinCountMismatch   = "MinCountMismatch"
	reasonInvalidAnnotation  = "InvalidAnnotation"
	reasonGroupFinished      = "PodGroupFinished"
	reasonWaitingForGang     = "WaitingForGang"
	// reasonOrderedReadyStatefulSet warns that a StatefulSet can never
	// form the group's gang (orderedready.go).
	reasonOrderedReadyStatefulSet = "OrderedReadyStatefulSet"
)

// Condition reasons written by the controller.
const (
	condReasonGangComplete          = "GangComplete"
	condReasonGangFits              = "GangFits"
	condReasonReservedCapacityTaken = "ReservedCapacityTaken"
	condReasonNoStalledPods         = "NoStalledPods"
	condReasonWaitingForPods        = "WaitingForPods"
	condReasonSchedulingGated       = "SchedulingGated"
	condReasonMinCountBound         = "MinCountBound"
	condReasonOtherSchedulingGates  = "OtherSchedulingGates"
	condReasonWaitingForReplacement = "WaitingForReplacement"
	// condReasonOrderedReadyStatefulSet: Admitted=False because a
	// StatefulSet that creates one pod at a time controls the group's pods.
	condReasonOrderedReadyStatefulSet = "OrderedReadyStatefulSet"
)

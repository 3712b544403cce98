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
)

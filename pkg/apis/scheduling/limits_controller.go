package scheduling

// Bounds the controller enforces on what one tenant may ask of it (issue
// 21), and the reasons and events that name a refusal. docs/limits.md lists
// every bound with its value and why.
const (
	// MaxGangMinCount is the largest gang.minCount (or pod annotation
	// min-count) the controller admits. Capacity-aware admission records a
	// gang's placements in status.placements in the same write as
	// Admitted=True, and validation caps that list at MaxPlacements, so a
	// larger gang could never be admitted: its status write would be
	// refused for ever. The controller refuses it up front instead, with
	// Admitted=False/ReasonMinCountTooLarge naming the field and the rule,
	// in both admission modes, so that one rule holds whatever the mode.
	MaxGangMinCount = MaxPlacements
)

const (
	// ReasonMinCountTooLarge (Admitted=False): minCount is above
	// MaxGangMinCount; the group is never admitted until it is lowered.
	ReasonMinCountTooLarge = "MinCountTooLarge"
	// ReasonStatusRejected (Admitted=False): the API refused the status
	// write that recorded the admission (Invalid, or too large for
	// storage); the decision and the capacity assumed for it were given
	// back, and admission is tried again only after a backoff or a change
	// of the group's spec.
	ReasonStatusRejected = "StatusRejected"
	// ReasonNoPods (Admitted=False): a group the controller created from pod
	// annotations has no pod left and was never admitted; it is deleted
	// --created-group-ttl after this condition's lastTransitionTime.
	ReasonNoPods = "NoPods"

	// EventStatusRejected (Warning, on the group): a status write was
	// refused as Invalid or too large, and the decision it carried given up.
	EventStatusRejected = "StatusRejected"
	// EventFinalizerReadded (Warning, on a pod): the tracking finalizer was
	// put back on a pod that was already counted; it is removed again and
	// the pod is not counted twice.
	EventFinalizerReadded = "FinalizerReadded"
)

package capacity

// Cause says, in the placement engine's own terms, why a cycle left a
// candidate waiting. capacity knows nothing of PodGroups: the admission
// mode that runs the cycle maps each cause to the reason its group's
// Admitted condition shows.
type Cause string

const (
	// CauseNone: the candidate was placed, or has nothing to place.
	CauseNone Cause = ""
	// CauseNoRoom: the gang does not fit in the free capacity now.
	CauseNoRoom Cause = "NoRoom"
	// CauseNeverFits: the gang does not fit even on the idle cluster.
	CauseNeverFits Cause = "NeverFits"
	// CauseQueued: under StrictFIFO, the gang waits behind the head of the
	// queue, which does not fit.
	CauseQueued Cause = "Queued"
	// CausePreempting: the gang waits for victims to go, chosen now (the
	// verdict names them) or in an earlier cycle.
	CausePreempting Cause = "Preempting"
)

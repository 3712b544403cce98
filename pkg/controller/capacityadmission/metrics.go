package capacityadmission

import "time"

// Metrics is what capacity admission reports; the controller serves it.
type Metrics interface {
	// Waiting is how many gangs the last cycle left waiting for capacity.
	Waiting(n int)
	// CycleTook is how long one admission cycle took.
	CycleTook(d time.Duration)
	// RequestAdmitted says that a gang whose capacity request stood for
	// waited is admitted.
	RequestAdmitted(waited time.Duration)
	// PodsRequested is how many pods the requests of the last plan ask
	// room for.
	PodsRequested(n int32)
	// Requested says that a request of kind asked room for pods.
	Requested(kind string, pods int32)
	// RequestWithdrawn says that a request was withdrawn, and why
	// ("timeout", "refused" or "failed": it could not be made).
	RequestWithdrawn(why string)
}

package podgroup

// podView is what one sync carries from step 2 to its end, in three parts:
// what the pods are (classification, classify.go), what must wait for the
// status write that records a decision (writeEffects, writeeffects.go), and
// when to look at the group again (requeueTimers, requeue.go). The parts are
// embedded so that a step reads v.gatedPods or calls v.onceWritten without
// naming the part; each method belongs to one part.
type podView struct {
	classification
	writeEffects
	requeueTimers
}

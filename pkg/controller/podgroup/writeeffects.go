package podgroup

// writeEffects are the side effects of a sync's decisions (events, the
// accounting metric, telling admission that its decision is recorded): they
// happen only once the status write that records the decision has
// succeeded, so that a conflict never repeats them.
type writeEffects struct {
	// recorded are the effects waiting for the next successful write.
	recorded []func()
	// decisionApplied says that this sync put an admission cycle's
	// placements into status; once written, the decision is recorded
	// (admitter.recorded).
	decisionApplied bool
}

// onceWritten defers a side effect of a decision until its status write.
func (e *writeEffects) onceWritten(f func()) { e.recorded = append(e.recorded, f) }

// written runs the side effects of the decisions that were just written.
func (e *writeEffects) written() {
	for _, f := range e.recorded {
		f()
	}
	e.recorded = nil
}

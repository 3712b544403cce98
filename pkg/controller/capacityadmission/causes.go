package capacityadmission

import (
	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// outcome is an admission cycle's verdict for one group in the API's
// terms: Reason and Message are what the group's Admitted=False shows while
// it waits. They start as the verdict's cause mapped to the API's reason
// (reasonFor) and its message; the autoscaler may rewrite both (plan).
type outcome struct {
	capacity.Verdict
	Reason, Message string
}

// outcomeOf is v with the API's reason for its cause.
func outcomeOf(v capacity.Verdict) outcome {
	return outcome{Verdict: v, Reason: reasonFor[v.Cause], Message: v.Message}
}

// reasonFor maps the placement engine's causes, which know nothing of
// PodGroups, to the reasons of the Admitted condition.
var reasonFor = map[capacity.Cause]string{
	capacity.CauseNone:       "",
	capacity.CauseNoRoom:     scheduling.ReasonInsufficientCapacity,
	capacity.CauseNeverFits:  scheduling.ReasonExceedsClusterCapacity,
	capacity.CauseQueued:     scheduling.ReasonQueued,
	capacity.CausePreempting: scheduling.ReasonPreempting,
}

// outcomesOf maps a cycle's verdicts, in order.
func outcomesOf(vs []capacity.Verdict) []outcome {
	out := make([]outcome, len(vs))
	for i, v := range vs {
		out[i] = outcomeOf(v)
	}
	return out
}

package visibility

import (
	"fmt"
	"strings"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/capacityadmission"
	"github.com/muster-dev/muster/pkg/whatif"
)

// statusOf is the API's answer for a gang and the cycle it would meet,
// before redaction: the preemptions name every victim.
func statusOf(g *whatif.Gang, w capacityadmission.WhatIf) *v1alpha1.WhatIfReviewStatus {
	v := w.Verdict
	st := &v1alpha1.WhatIfReviewStatus{
		PodGroup: g.PodGroup.Name,
		MinCount: g.Need,
		Pods:     int32(len(g.Pods)),
		Priority: w.Priority,
		Admitted: v.Admit,
		Reason:   w.Reason,
		Message:  v.Message,
		Queue:    positionOf(g.PodGroup.Namespace, w),
	}
	if v.Admit || len(v.Victims) > 0 {
		for i, node := range w.Nodes {
			if node != "" {
				st.Placements = append(st.Placements, v1alpha1.WhatIfPlacement{Pod: g.Names[i], Node: node})
			}
		}
	}
	if v.Domain != nil {
		st.Domain = v.Domain.Key + "=" + v.Domain.Value
	}
	for _, vic := range v.Victims {
		ns, name, _ := strings.Cut(vic.Key, "/")
		p := v1alpha1.WhatIfPreemption{Namespace: ns, Pods: int32(vic.Pods()), Priority: vic.Priority}
		if vic.Kind == "PodGroup" {
			p.PodGroup = name
		}
		st.Preemptions = append(st.Preemptions, p)
	}
	if a := w.Ask; a != nil {
		st.Autoscaler = &v1alpha1.WhatIfAutoscaler{Ask: a.Asks, Pods: a.Pods, Message: a.Why}
		if a.Asks {
			st.Autoscaler.Message = fmt.Sprintf("would ask for room for %d pods with a %s", a.Pods, a.Kind)
		}
	}
	return st
}

// positionOf is a what-if gang's place in the queue as its namespace may
// see it: the names of its own namespace's gangs ahead, and the others
// counted by priority.
func positionOf(namespace string, w capacityadmission.WhatIf) v1alpha1.QueuePosition {
	pos := v1alpha1.QueuePosition{Position: int32(w.Position), Waiting: int32(w.Waiting)}
	elsewhere := tally{}
	for _, q := range w.AheadQueued {
		if q.Key.Namespace == namespace {
			pos.Ahead = append(pos.Ahead, q.Key.Name)
		} else {
			elsewhere.add(q)
		}
	}
	pos.AheadElsewhere = elsewhere.less(nil)
	return pos
}

package capacity

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// QueueingStrategy says whether a gang may be admitted ahead of an older or
// higher-priority one that does not fit, as Kueue's strategies of the same
// names do.
type QueueingStrategy string

const (
	// BestEffortFIFO lets a gang that fits go ahead of one before it that does not.
	BestEffortFIFO QueueingStrategy = "BestEffortFIFO"
	// StrictFIFO admits nothing behind the head of the queue until the head fits.
	StrictFIFO QueueingStrategy = "StrictFIFO"
)

// Candidate is a group that has gated pods to place.
type Candidate struct {
	// Key is the group's namespace/name.
	Key      string
	Priority int32
	Created  time.Time
	// Pods are the group's gated, active pods.
	Pods []*corev1.Pod
	// Copies are pods not yet created that must fit with Pods: the missing
	// pods of roles created later, placed from their role's template.
	Copies []Copies
	// Need is how many of Pods and Copies must fit for the group to be
	// admitted, all at once. Zero marks an admitted group, whose pods are placed one by one
	// as they fit (replacements, or pods beyond minCount).
	Need int
}

// Verdict is an admission cycle's decision for one candidate.
type Verdict struct {
	Key string
	// Admit says that the pods in Assignments are to be pinned and released,
	// and the places in Copies reserved.
	Admit       bool
	Assignments []Assignment
	Copies      []CopiesOnNode
	// Reason and Message say why a gang waits, when it does not fit.
	Reason, Message string
}

// Admit runs one admission cycle on s: candidates are taken in order (by
// priority, higher first; among equal priority admitted groups' pods
// first, then by creation time), and each gang is placed whole or not at
// all. Admitted placements are committed to s, so that later candidates
// see them.
//
// Priority comes first for joiners too: a pod that joins an admitted group
// is placed alone and at once, so if joiners went before every gang, a
// tenant whose group is admitted could keep adding pods and hold capacity
// ahead of any higher-priority gang. Among equal priority they still go
// first, since their group already runs and waits for them.
func Admit(s *Snapshot, candidates []Candidate, strategy QueueingStrategy) []Verdict {
	cands := append([]Candidate(nil), candidates...)
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.Priority != b.Priority {
			return a.Priority > b.Priority
		}
		if (a.Need == 0) != (b.Need == 0) {
			return a.Need == 0
		}
		if !a.Created.Equal(b.Created) {
			return a.Created.Before(b.Created)
		}
		return a.Key < b.Key
	})
	if s.filters != nil {
		s.filters.mu.Lock()
		defer s.filters.mu.Unlock()
	}
	defer s.Close()
	var (
		verdicts []Verdict
		empty    *Snapshot
		head     string
	)
	for _, c := range cands {
		// Under StrictFIFO nothing goes behind the head, joiners neither:
		// they come after it only when their priority is lower.
		if head != "" {
			verdicts = append(verdicts, Verdict{Key: c.Key, Reason: scheduling.ReasonQueued,
				Message: fmt.Sprintf("queued behind PodGroup %s, which does not fit yet (StrictFIFO)", head)})
			continue
		}
		res := s.Place(c.Pods, c.Copies...)
		if c.Need == 0 || res.Placed() >= c.Need {
			if res.Placed() > 0 {
				s.Commit(res)
				verdicts = append(verdicts, Verdict{Key: c.Key, Admit: true, Assignments: res.Assignments, Copies: res.Copies})
			} else {
				s.Discard(res)
			}
			continue
		}
		s.Discard(res)
		if judgeIdle(c.Pods) {
			if empty == nil {
				empty = s.Empty()
			}
			idle := empty.Place(c.Pods, c.Copies...)
			empty.Discard(idle)
			if idle.Placed() < c.Need {
				verdicts = append(verdicts, Verdict{Key: c.Key, Reason: scheduling.ReasonExceedsClusterCapacity,
					Message: fmt.Sprintf("needs %d pods placed at once and can never fit: even the idle cluster fits %d: %s", c.Need, idle.Placed(), idle.Short)})
				continue
			}
		}
		verdicts = append(verdicts, Verdict{Key: c.Key, Reason: scheduling.ReasonInsufficientCapacity,
			Message: fmt.Sprintf("needs %d pods placed at once; %d fit now: %s", c.Need, res.Placed(), res.Short)})
		if strategy == StrictFIFO {
			head = c.Key
		}
	}
	return verdicts
}

// judgeIdle reports whether a gang that does not fit the idle cluster can
// never fit. Not for a gang with required pod affinity, which may need the
// very pods that idling removes, nor for one with devices, which the idle
// cluster cannot free: those wait as InsufficientCapacity.
func judgeIdle(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if len(p.Spec.ResourceClaims) > 0 {
			return false
		}
		if a := p.Spec.Affinity; a != nil && a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			return false
		}
	}
	return true
}

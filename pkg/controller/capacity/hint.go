package capacity

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
)

// A gang that did not fit is not placed again, cycle after cycle, until
// something happens that could change that answer: the queueing hints of
// kube-scheduler, for gangs. A Hint, kept with the gang's verdict, says
// what could help it; the admission queue (capacityadmission) holds the
// gang back, with its verdict, until the tracker's Changes match it.
//
// A hint rests on one rule: a gang that did not fit does not fit once
// room is only taken away. So only a change that may give room matters,
// and only where one of the gang's pods could use it: a node where none
// of them fits by NodeResourcesFit after the change gives none of them
// anything, and the other filters judge each node on its own, unless
// pods constrain each other across nodes. Gangs whose answer hangs on
// more than room are not held back at all (see hintFor).

// Hint says what could let a gang that does not fit now fit later.
type Hint struct {
	// Shapes are one pod of each distinct request among the gang's pods
	// and copies: room helps on a node where one of them fits.
	Shapes []*corev1.Pod
	// sigs name each shape's requests (PodRequests), to try it once a cycle.
	sigs []string
	// AnyRoom says that room given back on any node may help (the gang's
	// pods repel each other or others by anti-affinity, or request
	// resources that NodeResourcesFit alone cannot judge).
	AnyRoom bool
	// PreemptsBelow, when set, is the gang's priority: it may preempt, so
	// a pod or group of lower priority that begins to hold capacity may be
	// a victim that makes room.
	PreemptsBelow *int32
	// Until is when victims that --preemption-min-runtime spares now
	// become eligible (zero: none).
	Until time.Time
	// Head says that under StrictFIFO the gang closes the queue.
	Head bool
	// Silent says the cycle gave no verdict: an admitted group's pods
	// that found no room.
	Silent bool
}

// HintLook judges hints against one cycle's changes, on the snapshot
// that shows them: each shape of pod is tried on the freed nodes once,
// whatever the number of gangs of that shape.
type HintLook struct {
	ch   Changes
	s    *Snapshot
	now  time.Time
	opts noderesources.ResourceRequestsOptions
	fits map[string]bool
}

// NewHintLook returns a look at the changes ch, seen on snapshot s, at now.
func NewHintLook(ch Changes, s *Snapshot, now time.Time) *HintLook {
	return &HintLook{ch: ch, s: s, now: now, opts: fitOptions(), fits: map[string]bool{}}
}

// Helps reports whether the changes may let the gang with hint h fit.
func (l *HintLook) Helps(h *Hint) bool {
	if h == nil {
		return true
	}
	if !h.Until.IsZero() && !l.now.Before(h.Until) {
		return true
	}
	if l.ch.Nodes || (h.PreemptsBelow != nil && l.ch.LowestHolder < *h.PreemptsBelow) {
		return true
	}
	if len(l.ch.Freed) == 0 {
		return false
	}
	if h.AnyRoom || l.ch.Anywhere {
		return true
	}
	for i, p := range h.Shapes {
		fits, ok := l.fits[h.sigs[i]]
		if !ok {
			fits = l.fitsFreed(p)
			l.fits[h.sigs[i]] = fits
		}
		if fits {
			return true
		}
	}
	return false
}

// fitsFreed reports whether p fits, by NodeResourcesFit, on a freed node.
func (l *HintLook) fitsFreed(p *corev1.Pod) bool {
	for name := range l.ch.Freed {
		i, ok := l.s.index[name]
		if !ok {
			continue // not a node the snapshot offers
		}
		if len(noderesources.Fits(p, l.s.info(i), nil, l.opts)) == 0 {
			return true
		}
	}
	return false
}

// fitOptions are NodeResourcesFit's options under the feature gates the
// scheduler's filters run with.
func fitOptions() noderesources.ResourceRequestsOptions {
	gates := utilfeature.DefaultFeatureGate
	return noderesources.ResourceRequestsOptions{
		EnablePodLevelResources: gates.Enabled(features.PodLevelResources),
	}
}

// hintFor is the hint for gang c, which did not fit in this cycle, or
// nil when the gang must be placed again every cycle: its answer may
// change with no room given back. That is so when one of its pods
//   - requires pod affinity: a pod created that it selects may let it fit;
//   - has topology spread constraints: pods added elsewhere change a
//     domain's skew;
//   - has resource claims, or volumes of claims: devices and volumes come
//     and go with objects the tracker does not follow;
//   - has anti-affinity terms that select namespaces by label;
//
// or when it is in the middle of a preemption, or has capacity-request
// pods of its own (own), whose room is free for it alone. tried says that
// the cycle looked for victims for it, in vain.
func hintFor(c Candidate, pre *preemption, own, tried bool) *Hint {
	if len(c.Preempting) > 0 || own {
		return nil
	}
	h := &Hint{Silent: c.Need == 0}
	seen := map[string]bool{}
	add := func(p *corev1.Pod) bool {
		if !hintable(p) {
			return false
		}
		if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			h.AnyRoom = true
		}
		req := PodRequests(p)
		if len(req.Scalar) > 0 {
			// Extended resources, which devices may serve.
			h.AnyRoom = true
		}
		sig := fmt.Sprint(req)
		if !seen[sig] {
			seen[sig] = true
			h.Shapes, h.sigs = append(h.Shapes, p), append(h.sigs, sig)
		}
		return true
	}
	for _, p := range c.Pods {
		if !add(p) {
			return nil
		}
	}
	for _, cp := range c.Copies {
		if cp.Template == nil || !add(cp.Template) {
			return nil
		}
	}
	if tried && c.Preempt && pre.opts.Victims != nil && c.Need > 0 {
		prio := c.Priority
		h.PreemptsBelow = &prio
		h.Until = pre.sparedUntil(prio)
	}
	return h
}

// hintable reports whether a pod's answer hangs only on room and on
// filters that judge each node on its own (see hintFor).
func hintable(p *corev1.Pod) bool {
	if usesClaims(p) || requiredPodAffinity(p) != nil || len(p.Spec.TopologySpreadConstraints) > 0 {
		return false
	}
	for _, v := range p.Spec.Volumes {
		if v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			return false
		}
	}
	if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
		for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			if t.NamespaceSelector != nil {
				return false
			}
		}
	}
	return true
}

// sparedUntil is when the first victim of priority below prio that
// --preemption-min-runtime spared in this cycle becomes eligible (zero:
// none was spared).
func (p *preemption) sparedUntil(prio int32) time.Time {
	var at time.Time
	for _, v := range p.sparedVictims {
		if v.Priority >= prio {
			continue
		}
		if t := v.Since.Add(p.opts.MinRuntime); at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at
}

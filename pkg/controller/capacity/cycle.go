package capacity

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

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
	Key      scheduling.GroupKey
	Priority int32
	Created  time.Time
	// Pods are the group's gated, active pods.
	Pods []*corev1.Pod
	// Copies are pods not yet created that must fit with Pods: the missing
	// pods of roles created later, placed from their role's template.
	Copies []Copies
	// Topology, when set, is where the gang's pods must, or would rather,
	// go together (topology.go).
	Topology *Topology
	// Need is how many of Pods and Copies must fit for the group to be
	// admitted, all at once. Zero marks an admitted group, whose pods are placed one by one
	// as they fit (replacements, or pods beyond minCount).
	Need int
	// Preempt says that the gang may preempt lower-priority ones to fit:
	// none of its pods says preemptionPolicy: Never.
	Preempt bool
	// Preempting are the keys (namespace/name) of the victims of the
	// preemption recorded in the group's status, decided at PreemptedAt:
	// while any of them is still going, the gang waits for it, and starts
	// no second preemption.
	Preempting  []string
	PreemptedAt time.Time
	// Parked, when set, is the gang's verdict from the cycle that last
	// placed it, which nothing since can have changed (hint.go): the cycle
	// gives it again, in the gang's place in the order, without placing
	// the gang.
	Parked *Verdict
}

// Verdict is an admission cycle's decision for one candidate.
type Verdict struct {
	Key scheduling.GroupKey
	// Admit says that the pods in Assignments are to be pinned and released,
	// and the places in Copies reserved.
	Admit       bool
	Assignments []Assignment
	Copies      []CopiesOnNode
	// Domain and RoleDomains are the topology domains the gang, and its
	// roles, were placed in, when its Topology asks for them.
	Domain      *Domain
	RoleDomains map[string]Domain
	// Cause and Message say why a gang waits, when it does not fit.
	Cause   Cause
	Message string
	// Victims, with Cause CausePreempting, are a new preemption: what the gang
	// evicts to fit. Assignments are then where its pods would go.
	Victims []*Victim
	// Hint, for a gang that does not fit, says what could change that
	// (hint.go); nil: only placing it again can tell.
	Hint *Hint
}

// Options are an admission cycle's settings.
type Options struct {
	Strategy QueueingStrategy
	// Victims returns what preemption may choose from; nil turns
	// preemption off. The cycle calls it at most once, and only when a
	// gang that may preempt does not fit.
	Victims func() Pool
	// Victims admitted (or pods created) after Now less MinRuntime are
	// spared (--preemption-min-runtime).
	Now        time.Time
	MinRuntime time.Duration
	// Requests returns what a gang's own capacity-request pods hold
	// (Tracker.Requests): room an autoscaler added for it, free for it and
	// for no one else. Nil when Muster asks no autoscaler.
	Requests func(key scheduling.GroupKey) *Victim
	// Autoscaling says that nodes may be added: a gang that does not fit
	// even the idle cluster may fit later, so it keeps its place at the
	// head of a StrictFIFO queue.
	Autoscaling bool
}

// CompareCandidates is the queue's order: higher priority first, then
// admitted groups' pods before gangs, then the older, then by key.
func CompareCandidates(a, b *Candidate) int {
	if a.Priority != b.Priority {
		return cmp.Compare(b.Priority, a.Priority)
	}
	if (a.Need == 0) != (b.Need == 0) {
		if a.Need == 0 {
			return -1
		}
		return 1
	}
	if c := a.Created.Compare(b.Created); c != 0 {
		return c
	}
	return compareKeys(a.Key, b.Key)
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
func Admit(s *Snapshot, candidates []Candidate, opts Options) (verdicts []Verdict) {
	strategy := opts.Strategy
	// Pointers are sorted, not the candidates: a cycle over a deep queue
	// would spend its time moving them.
	cands := make([]*Candidate, len(candidates))
	for i := range candidates {
		cands[i] = &candidates[i]
	}
	slices.SortStableFunc(cands, CompareCandidates)
	if s.filters != nil {
		s.filters.mu.Lock()
		defer s.filters.mu.Unlock()
	}
	defer s.Close()
	// A gang whose recorded preemption is in flight holds room in the
	// cycle that the tracker does not know of, and may hold other room
	// next cycle: while one does, every gang is placed, and none is given
	// a hint.
	hints := !slices.ContainsFunc(cands, func(c *Candidate) bool { return len(c.Preempting) > 0 })
	defer func() {
		if !hints {
			for i := range verdicts {
				verdicts[i].Hint = nil
			}
		}
	}()
	var (
		empty *Snapshot
		head  string
		pre   = preemption{opts: opts, taken: map[*Victim]bool{}}
	)
	for _, cp := range cands {
		c := *cp
		// Under StrictFIFO nothing goes behind the head, joiners neither:
		// they come after it only when their priority is lower.
		if head != "" {
			verdicts = append(verdicts, Verdict{Key: c.Key, Cause: CauseQueued,
				Message: fmt.Sprintf("queued behind PodGroup %s, which does not fit yet (StrictFIFO)", head)})
			continue
		}
		if v := c.Parked; hints && v != nil && v.Hint != nil {
			// Nothing since the gang's last placement can let it fit: its
			// verdict stands, and it keeps its place.
			verdicts = append(verdicts, *v)
			if strategy == StrictFIFO && v.Hint.Head {
				head = c.Key.String()
			}
			continue
		}
		// The gang's own capacity-request pods make way for it: they are
		// deleted before it is released (requests.go).
		requested, own := func() {}, false
		if opts.Requests != nil && c.Need > 0 {
			if r := opts.Requests(c.Key); r != nil {
				requested, own = s.takeOff([]*Victim{r}, false), true
			}
		}
		res := c.place(s)
		if c.Need == 0 || res.Placed() >= c.Need {
			if res.Placed() > 0 {
				s.Commit(res)
				verdicts = append(verdicts, Verdict{Key: c.Key, Admit: true, Assignments: res.Assignments, Copies: res.Copies,
					Domain: res.Domain, RoleDomains: res.RoleDomains})
			} else {
				s.Discard(res)
				requested()
				// No room for any of an admitted group's pods: no verdict
				// to record, only a hint (Hint.Silent).
				if h := hintFor(c, &pre, own, false); h != nil {
					verdicts = append(verdicts, Verdict{Key: c.Key, Hint: h})
				}
			}
			continue
		}
		s.Discard(res)
		requested()
		var keep func(*corev1.Pod) bool // nil: the idle cluster has no pod
		devices := s.idlesDevices()
		judged := judgeIdle(c.Pods, devices)
		if !judged && strategy == StrictFIFO {
			// This gang would close the queue: judge it on the idle
			// cluster that keeps the pods its pod affinity needs. Once per
			// cycle at most, since the first gang that does not fit and
			// is not skipped becomes the head.
			keep, judged = judgeIdleKeeping(c.Pods, s.namespaceLabels, devices)
		}
		if judged {
			on, but := empty, ""
			if keep != nil {
				on, but = s.EmptyKeeping(keep), " but for the pods its required pod affinity selects"
			} else if on == nil {
				empty = s.Empty()
				on = empty
			}
			var placed Result
			s.idleDevicesFor(func() {
				placed = c.place(on)
				on.Discard(placed)
			})
			if placed.Placed() < c.Need {
				v := Verdict{Key: c.Key, Cause: CauseNeverFits,
					Message: fmt.Sprintf("needs %d pods placed at once and can never fit: even the idle cluster%s fits %d: %s", c.Need, but, placed.Placed(), placed.Short)}
				if placed.topology {
					v.Message = fmt.Sprintf("can never fit: even on the idle cluster%s, it %s", but, placed.Short)
				}
				closes := opts.Autoscaling && strategy == StrictFIFO
				if keep == nil {
					// Judged with pod affinity kept, a pod created may
					// change the answer: no hint then.
					if v.Hint = hintFor(c, &pre, own, false); v.Hint != nil {
						v.Hint.Head = closes
					}
				}
				verdicts = append(verdicts, v)
				if closes {
					head = c.Key.String()
				}
				continue
			}
		}
		msg := fmt.Sprintf("needs %d pods placed at once; %d fit now: %s", c.Need, res.Placed(), res.Short)
		if res.topology {
			msg = res.Short
		}
		if v, ok := pre.try(s, c, msg); ok {
			verdicts = append(verdicts, v)
			// A new preemption holds room that the tracker does not know
			// of, until the group records it: no hints in this cycle.
			hints = hints && len(v.Victims) == 0
		} else {
			v := Verdict{Key: c.Key, Cause: CauseNoRoom, Message: v.Message, Hint: hintFor(c, &pre, own, true)}
			if v.Hint != nil {
				v.Hint.Head = strategy == StrictFIFO
			}
			verdicts = append(verdicts, v)
		}
		if strategy == StrictFIFO {
			head = c.Key.String()
		}
	}
	return verdicts
}

// judgeIdle reports whether a gang that does not fit the idle cluster can
// never fit. Not for a gang with required pod affinity, which may need the
// very pods that idling removes (judgeIdleKeeping judges it), nor, unless
// devices (the snapshot frees every device while it judges,
// idleDevicesFor), for one with devices: those wait as
// InsufficientCapacity.
func judgeIdle(pods []*corev1.Pod, devices bool) bool {
	for _, p := range pods {
		if (len(p.Spec.ResourceClaims) > 0 && !devices) || requiredPodAffinity(p) != nil {
			return false
		}
	}
	return true
}

// judgeIdleKeeping judges a gang with required pod affinity on the idle
// cluster that keeps the pods its affinity terms select, where they are:
// a gang that does not fit even there can never fit as the cluster
// stands, whatever pods leave it; only a pod created that its terms
// select may change that, which the next cycle sees. A term's
// namespaceSelector is matched against nsLabels, the namespaces' labels
// as the scheduler's filters read them (nil: such a term is not judged).
// Not for a gang with devices unless devices, as judgeIdle; the kept
// pods' devices count as free then, which can only judge fewer gangs
// never to fit.
func judgeIdleKeeping(pods []*corev1.Pod, nsLabels func(string) (labels.Set, bool), devices bool) (keep func(*corev1.Pod) bool, ok bool) {
	type term struct {
		namespaces map[string]bool // nil, and no nsSelector: every namespace
		nsSelector labels.Selector // besides namespaces, as upstream unions them
		selector   labels.Selector
	}
	var terms []term
	for _, p := range pods {
		if len(p.Spec.ResourceClaims) > 0 && !devices {
			return nil, false
		}
		for _, t := range requiredPodAffinity(p) {
			sel, err := metav1.LabelSelectorAsSelector(t.LabelSelector)
			if err != nil {
				return nil, false
			}
			tm := term{selector: sel}
			switch {
			case t.NamespaceSelector != nil && (len(t.NamespaceSelector.MatchLabels) > 0 || len(t.NamespaceSelector.MatchExpressions) > 0):
				if nsLabels == nil {
					return nil, false
				}
				if tm.nsSelector, err = metav1.LabelSelectorAsSelector(t.NamespaceSelector); err != nil {
					return nil, false
				}
				tm.namespaces = map[string]bool{}
				for _, ns := range t.Namespaces {
					tm.namespaces[ns] = true
				}
			case t.NamespaceSelector != nil:
				// {} selects every namespace.
			default:
				tm.namespaces = map[string]bool{}
				for _, ns := range t.Namespaces {
					tm.namespaces[ns] = true
				}
				if len(t.Namespaces) == 0 {
					tm.namespaces[p.Namespace] = true
				}
			}
			terms = append(terms, tm)
		}
	}
	// Each namespace is looked up once per judgement.
	selected := map[string]map[int]bool{}
	inNamespaces := func(i int, t term, ns string) bool {
		if t.namespaces == nil || t.namespaces[ns] {
			return true
		}
		if t.nsSelector == nil {
			return false
		}
		if selected[ns] == nil {
			selected[ns] = map[int]bool{}
			if l, ok := nsLabels(ns); ok {
				for j, u := range terms {
					selected[ns][j] = u.nsSelector != nil && u.nsSelector.Matches(l)
				}
			}
		}
		return selected[ns][i]
	}
	return func(p *corev1.Pod) bool {
		for i, t := range terms {
			if t.selector.Matches(labels.Set(p.Labels)) && inNamespaces(i, t, p.Namespace) {
				return true
			}
		}
		return false
	}, true
}

// requiredPodAffinity is p's required pod affinity terms.
func requiredPodAffinity(p *corev1.Pod) []corev1.PodAffinityTerm {
	if a := p.Spec.Affinity; a != nil && a.PodAffinity != nil {
		return a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// preemption is what one cycle knows of preemption: the pool, fetched once,
// and the victims taken so far, which no later preemptor takes again.
type preemption struct {
	opts   Options
	pool   *Pool
	spared int
	// sparedVictims are those --preemption-min-runtime spared (hint.go).
	sparedVictims []*Victim
	taken         map[*Victim]bool
	// byKey indexes the pool's eligible victims by key (eligibleVictim).
	byKey map[string]*Victim
}

func (p *preemption) fetch() *Pool {
	if p.pool == nil {
		pool := p.opts.Victims()
		if p.opts.MinRuntime > 0 {
			cut := p.opts.Now.Add(-p.opts.MinRuntime)
			kept := pool.Eligible[:0]
			for _, v := range pool.Eligible {
				if v.Since.After(cut) {
					p.spared++
					p.sparedVictims = append(p.sparedVictims, v)
					continue
				}
				kept = append(kept, v)
			}
			pool.Eligible = kept
		}
		p.pool = &pool
	}
	return p.pool
}

// recorded finds what is left of c's recorded preemption: the victims
// that still hold capacity (going), and whether it is still in flight,
// which it is while any victim is marked and not admitted again (its pods
// may be going, though this cycle's snapshot, taken a moment before the
// pool, may still show them), or is still admitted since before the
// decision (a crash came between the decision and the marking). A victim
// pod Muster does not manage is in flight while it is being deleted, and
// while it still runs, created before the decision (not yet evicted). A
// victim admitted again (or a pod of its name created) after the decision,
// gone, or finished, ends it: only then may the gang preempt anew.
func (p *preemption) recorded(c Candidate, pool *Pool) (going []*Victim, pods int, inFlight bool) {
	for _, key := range c.Preempting {
		if v := pool.Marked[key]; v != nil {
			inFlight = true
			// Pods being deleted hold no capacity but keep their devices
			// until they are gone: the gang holds those too.
			if v.holdsAnything() {
				going = append(going, v)
				pods += v.Pods() + v.leaving
			}
			continue
		}
		if v := p.eligibleVictim(key); v != nil && !p.taken[v] && !v.Since.After(c.PreemptedAt) {
			inFlight = true
			going = append(going, v)
			pods += v.Pods()
		}
	}
	return going, pods, inFlight
}

// eligibleVictim is the eligible victim of that key, a group or a pod, or
// nil; the index is built once a cycle, the first time a recorded
// preemption asks. A group wins over a pod of the same name.
func (p *preemption) eligibleVictim(victim string) *Victim {
	if p.byKey == nil {
		p.byKey = map[string]*Victim{}
		for _, v := range p.pool.Eligible {
			if old := p.byKey[v.Key]; old == nil || old.Kind != scheduling.VictimKindPodGroup {
				p.byKey[v.Key] = v
			}
		}
	}
	return p.byKey[victim]
}

// try is preemption for a gang c that does not fit on s, with msg saying
// why. A gang whose recorded preemption still has victims holding capacity
// places itself as if they were gone, and holds that room for the rest of
// the cycle, so that no gang of lower priority takes it meanwhile; it
// waits, with reason Preempting. Otherwise, if it may preempt, it looks
// for victims (Snapshot.preempt): found, they and its placement are
// committed to s and the verdict names them. Not found, the verdict's
// message says why preemption cannot help.
func (p *preemption) try(s *Snapshot, c Candidate, msg string) (Verdict, bool) {
	if p.opts.Victims == nil || c.Need == 0 {
		return Verdict{Message: msg}, false
	}
	defer s.preempting()()
	pool := p.fetch()
	if going, pods, inFlight := p.recorded(c, pool); inFlight {
		for _, v := range going {
			p.taken[v] = true
		}
		undo := s.evict(going)
		res := c.place(s)
		if res.Placed() >= c.Need {
			s.Commit(res)
		} else {
			s.Discard(res)
			undo()
		}
		return Verdict{Key: c.Key, Cause: CausePreempting,
			Message: fmt.Sprintf("waiting for %d pods of the %d preempted gang(s) or pod(s) to be deleted; %s", pods, len(c.Preempting), msg)}, true
	}
	if !c.Preempt {
		return Verdict{Message: msg + "; it does not preempt: its pods say preemptionPolicy: Never"}, false
	}
	ch, ok, why := s.preempt(c, pool.Eligible, p.taken)
	if !ok {
		if p.spared > 0 {
			why += fmt.Sprintf(" (%d admitted more recently than --preemption-min-runtime are spared)", p.spared)
		}
		return Verdict{Message: msg + "; " + why}, false
	}
	s.Commit(ch.res)
	for _, v := range ch.victims {
		p.taken[v] = true
	}
	return Verdict{Key: c.Key, Cause: CausePreempting, Victims: ch.victims, Assignments: ch.res.Assignments, Copies: ch.res.Copies,
		Domain: ch.res.Domain, RoleDomains: ch.res.RoleDomains,
		Message: fmt.Sprintf("preempting %d of lower priority to fit: %s", len(ch.victims), describeVictims(c.Key.Namespace, ch.victims))}, true
}

// compareKeys orders keys as their String forms do, building them only
// for keys of different namespaces.
func compareKeys(a, b scheduling.GroupKey) int {
	if a.Namespace == b.Namespace {
		return strings.Compare(a.Name, b.Name)
	}
	return strings.Compare(a.String(), b.String())
}

// place places the candidate's pods and copies on s, in the domains its
// topology asks for.
func (c *Candidate) place(s *Snapshot) Result {
	return s.PlaceGang(c.Pods, c.Copies, c.Topology, c.Need)
}

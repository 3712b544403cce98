package podgroup

import (
	"context"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// The reasons of muster_controller_podgroup_creations_refused_total.
const (
	refusedMaxPerNamespace = "max-per-namespace"
	refusedRate            = "rate"
)

// maxSweepPeriod caps how long the map of buckets goes unswept when a
// bucket takes longer than this to fill (a tiny --created-podgroup-qps).
const maxSweepPeriod = 10 * time.Minute

// holdCreation says whether syncMissingGroup must not create the group of
// key now, and when to look at it again (0: when a PodGroup of its
// namespace is deleted). A tenant who may only create pods makes the
// controller create one group per new group name; without these bounds, a
// create-and-delete loop of pods grows the PodGroups in Muster's etcd
// without end, whatever the tenant's pod quota (issue 34). Groups that exist
// are never held, and groups created through the API are not: RBAC and
// ResourceQuota govern those, and they only count toward the namespace's
// total.
func (c *Controller) holdCreation(ctx context.Context, key scheduling.GroupKey, waiting []*corev1.Pod) (time.Duration, bool) {
	if held := c.atGroupBound(key, waiting); held {
		return 0, true
	}
	delay := c.created.take(key, c.clock.Now())
	if delay <= 0 {
		return 0, false
	}
	c.metrics.creationsRefused.WithLabelValues(refusedRate).Inc()
	// No event: the pods are only paced, and syncs again when their turn
	// comes, which the reservation keeps for them.
	klog.FromContext(ctx).V(2).Info("Pacing the creation of a PodGroup from pods (--created-podgroup-qps)", "retryAfter", delay)
	return delay, true
}

// atGroupBound reports whether the namespace of key holds
// --max-podgroups-per-namespace PodGroups, and if so tells each waiting pod
// once. The key is marked as waiting before the groups are counted, so that
// a deletion that the count does not see yet finds the mark and requeues
// the key (releaseWaiting).
func (c *Controller) atGroupBound(key scheduling.GroupKey, waiting []*corev1.Pod) bool {
	limit := c.cfg.MaxGroupsPerNamespace
	if limit <= 0 {
		return false
	}
	c.created.markWaiting(key)
	n := c.groupsIn(key.Namespace)
	if n < limit {
		c.created.unmarkWaiting(key)
		return false
	}
	c.metrics.creationsRefused.WithLabelValues(refusedMaxPerNamespace).Inc()
	for _, p := range waiting {
		c.warnOnce(p.UID, scheduling.EventPodGroupNotCreated, func() {
			c.recorder.Eventf(p, corev1.EventTypeWarning, scheduling.EventPodGroupNotCreated,
				"cannot create PodGroup %s: namespace %s holds %d PodGroups, the most beside which Muster creates one from pods "+
					"(--max-podgroups-per-namespace=%d); delete finished groups or ask an administrator",
				key.Name, key.Namespace, n, limit)
		})
	}
	return true
}

// groupsIn counts the PodGroups of a namespace in the informer's cache,
// through its namespace index: every group, whoever created it and whatever
// its phase, since each takes room in etcd.
func (c *Controller) groupsIn(namespace string) int {
	objs, err := c.pgIndexer.ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		// New installs the index; without it nothing can be counted, and a
		// bound that cannot count must not hold creation for ever.
		return 0
	}
	return len(objs)
}

// addNamespaceIndexer installs cache.NamespaceIndex on the PodGroup
// informer unless its factory did, so that groupsIn never lists all groups.
func addNamespaceIndexer(informer cache.SharedIndexInformer) error {
	if _, ok := informer.GetIndexer().GetIndexers()[cache.NamespaceIndex]; ok {
		return nil
	}
	return informer.AddIndexers(cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// createdGroups is what the controller keeps to bound the groups it creates
// from pods: a token bucket per namespace, the turns reserved in them, and
// the groups that wait for their namespace to fall below
// --max-podgroups-per-namespace.
type createdGroups struct {
	qps   rate.Limit
	burst int
	// sweepEvery is how long a bucket takes to fill from empty, capped.
	sweepEvery time.Duration

	mu sync.Mutex
	// buckets holds the namespaces whose bucket is not known to be full.
	// A full bucket is the same as a new one, so sweep drops it: the map
	// holds only the namespaces that created a group within about one
	// fill time, and never grows with the namespaces there ever were.
	buckets   map[string]*rate.Limiter
	lastSweep time.Time
	// turns are the times from which groups may be created: each group
	// takes one token, once, and a group paced by its bucket comes back
	// when its turn is due, so N waiting groups cost N syncs, not N every
	// time a token comes. A turn goes when its group exists (the informer
	// brings it) or no pod waits for it any more (forget), which gives a
	// turn not yet due back to its bucket: a tenant that deletes its pods
	// before their groups' turns does not push its own later groups out.
	turns map[scheduling.GroupKey]turn
	// waiting holds, per namespace, the groups held at the bound: the
	// PodGroup delete handler requeues them (releaseWaiting), and a sync
	// that finds them held again marks them again.
	waiting map[string]sets.Set[scheduling.GroupKey]
}

// turn is a group's reservation of a token, due from due.
type turn struct {
	due time.Time
	r   *rate.Reservation
}

// newCreatedGroups returns the bounds of cfg.
func newCreatedGroups(cfg Config) *createdGroups {
	g := &createdGroups{
		qps:     rate.Limit(cfg.CreatedGroupQPS),
		burst:   cfg.CreatedGroupBurst,
		buckets: map[string]*rate.Limiter{},
		turns:   map[scheduling.GroupKey]turn{},
		waiting: map[string]sets.Set[scheduling.GroupKey]{},
	}
	g.sweepEvery = maxSweepPeriod
	if cfg.CreatedGroupQPS > 0 {
		if fill := float64(cfg.CreatedGroupBurst) / cfg.CreatedGroupQPS; fill < maxSweepPeriod.Seconds() {
			g.sweepEvery = time.Duration(fill * float64(time.Second))
		}
	}
	return g
}

// take returns how long the group of key must wait for its namespace's
// bucket: 0 lets it be created now. A group spends one token however often
// its create is tried: a create that fails (over its namespace's quota,
// say) is retried with the queue's backoff, which growing as it should
// needs syncs that return the error, not a wait for a token that would
// reset it.
func (g *createdGroups) take(key scheduling.GroupKey, now time.Time) time.Duration {
	if g.qps <= 0 {
		return 0
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if t, ok := g.turns[key]; ok {
		if now.Before(t.due) {
			return t.due.Sub(now) // woken early, by one of its pods
		}
		return 0 // paid
	}
	g.sweep(now)
	b := g.buckets[key.Namespace]
	if b == nil {
		b = rate.NewLimiter(g.qps, g.burst)
		g.buckets[key.Namespace] = b
	}
	// Validation keeps the burst at 1 or more, so the reservation is OK.
	r := b.ReserveN(now, 1)
	delay := r.DelayFrom(now)
	g.turns[key] = turn{due: now.Add(delay), r: r}
	return delay
}

// sweep drops the buckets that are full again, at most once per fill time.
// Those with turns reserved are not full, so no turn is lost.
func (g *createdGroups) sweep(now time.Time) {
	if now.Sub(g.lastSweep) < g.sweepEvery {
		return
	}
	g.lastSweep = now
	for ns, b := range g.buckets {
		if b.TokensAt(now) >= float64(g.burst) {
			delete(g.buckets, ns)
		}
	}
}

// markWaiting records that the group of key waits for its namespace to
// fall below the bound.
func (g *createdGroups) markWaiting(key scheduling.GroupKey) {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.waiting[key.Namespace]
	if s == nil {
		s = sets.New[scheduling.GroupKey]()
		g.waiting[key.Namespace] = s
	}
	s.Insert(key)
}

// unmarkWaiting forgets that the group of key waits at the bound.
func (g *createdGroups) unmarkWaiting(key scheduling.GroupKey) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.unmarkLocked(key)
}

func (g *createdGroups) unmarkLocked(key scheduling.GroupKey) {
	s := g.waiting[key.Namespace]
	if s == nil {
		return
	}
	s.Delete(key)
	if s.Len() == 0 {
		delete(g.waiting, key.Namespace)
	}
}

// releaseWaiting returns, and forgets, the groups of a namespace that
// wait at the bound: a deletion there may have made room for one. Those
// still held when they sync are marked again.
func (g *createdGroups) releaseWaiting(namespace string) []scheduling.GroupKey {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := g.waiting[namespace]
	delete(g.waiting, namespace)
	return s.UnsortedList()
}

// forget drops what is kept for the group of key: it exists now, or no pod
// waits for it to be created.
func (g *createdGroups) forget(key scheduling.GroupKey) {
	g.forgetAt(key, time.Now())
}

// forgetAt is forget at now, which gives back a turn due after now.
func (g *createdGroups) forgetAt(key scheduling.GroupKey, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if t, ok := g.turns[key]; ok {
		t.r.CancelAt(now) // nothing once it is due
		delete(g.turns, key)
	}
	g.unmarkLocked(key)
}

package capacityadmission

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
	"github.com/muster-dev/muster/pkg/controller/autoscaling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// Backoff between two requests of one gang, after one was withdrawn:
// capacityRequestBackoff, doubling with each withdrawal, at most
// capacityRequestMaxBackoff (as Kueue retries a ProvisioningRequest).
const (
	capacityRequestBackoff    = time.Minute
	capacityRequestMaxBackoff = 30 * time.Minute
)

// autoscaler is capacity-aware admission's side of autoscaling
// (docs/controller.md, "Autoscaled clusters"). After each admission cycle
// it decides which waiting gangs ask an autoscaler for room (plan): those
// Muster would admit next, whole, in queue order, within a bound of pods;
// its workers then make each decided request exist, or withdraw it,
// through the Requester. A gang placed on the room its request got has it
// withdrawn before any of its pods is released (beforeRelease).
type autoscaler struct {
	req      autoscaling.Requester
	timeout  time.Duration
	maxPods  int32
	image    string
	strict   bool
	clock    clock.PassiveClock
	announce admission.Announce
	metrics  Metrics
	work     workqueue.TypedRateLimitingInterface[scheduling.GroupKey]
	// poke asks admission for a cycle.
	poke func()

	mu sync.Mutex
	// demands are the waiting gangs' demands, built when their group
	// offers itself (offer), by key.
	demands map[scheduling.GroupKey]groupDemand
	// want are the requests the last cycle decided on.
	want map[scheduling.GroupKey]autoscaling.Demand
	// backoff holds the gangs whose request was withdrawn, until they may
	// ask again.
	backoff map[scheduling.GroupKey]requestBackoff
	// failed is why a request could not be made, and since when, until
	// it is made or withdrawn.
	failed map[scheduling.GroupKey]requestFailure
	// provisioned marks the requests announced as provisioned (an event).
	provisioned map[scheduling.GroupKey]string
	// busy serializes, per group, a worker's request and the withdrawal
	// before release, so that no create lands after it.
	busy keyedMutex
}

// keyedMutex is a mutex per key.
type keyedMutex struct{ m sync.Map }

func (k *keyedMutex) lock(key scheduling.GroupKey) (unlock func()) {
	mu, _ := k.m.LoadOrStore(key, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	return mu.(*sync.Mutex).Unlock
}

// forget drops key's mutex unless it is held.
func (k *keyedMutex) forget(key scheduling.GroupKey) {
	if mu, ok := k.m.Load(key); ok && mu.(*sync.Mutex).TryLock() {
		k.m.Delete(key)
		mu.(*sync.Mutex).Unlock()
	}
}

type groupDemand struct {
	uids   []types.UID
	copies int
	demand autoscaling.Demand
}

type requestFailure struct {
	why   string
	since time.Time
}

type requestBackoff struct {
	until    time.Time
	failures int
	message  string
}

func newAutoscaler(opts AutoscalingOptions, strict bool, announce admission.Announce, clk clock.PassiveClock, m Metrics, poke func()) *autoscaler {
	return &autoscaler{
		req:         opts.Requester,
		timeout:     opts.Timeout,
		maxPods:     opts.MaxPods,
		image:       opts.Image,
		strict:      strict,
		clock:       clk,
		announce:    announce,
		metrics:     m,
		poke:        poke,
		work:        workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[scheduling.GroupKey](), workqueue.TypedRateLimitingQueueConfig[scheduling.GroupKey]{Name: "capacity-requests"}),
		demands:     map[scheduling.GroupKey]groupDemand{},
		want:        map[scheduling.GroupKey]autoscaling.Demand{},
		backoff:     map[scheduling.GroupKey]requestBackoff{},
		failed:      map[scheduling.GroupKey]requestFailure{},
		provisioned: map[scheduling.GroupKey]string{},
	}
}

// start runs the Requester's informer and the workers until ctx ends, and
// returns what must sync before the first cycle.
func (s *autoscaler) start(ctx context.Context, wg *sync.WaitGroup) cache.InformerSynced {
	synced := s.req.Start(ctx, func(scheduling.GroupKey) { s.poke() })
	wg.Go(func() {
		<-ctx.Done()
		s.work.ShutDown()
	})
	for range 2 {
		wg.Go(func() {
			for s.next(ctx) {
			}
		})
	}
	return synced
}

// offer records the demand of a gang that waits for capacity: its gated
// pods and the pods of its createdLater roles, built again only when they
// change. Called from the group's sync.
func (s *autoscaler) offer(key scheduling.GroupKey, pg *v1alpha1.PodGroup, pods []*corev1.Pod, copies []capacity.Copies) {
	// The index lists a group's pods in no fixed order: sorted, the same
	// pods make the same demand, and the same hash.
	pods = slices.SortedFunc(slices.Values(pods), func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	uids := make([]types.UID, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	n := 0
	for _, c := range copies {
		n += c.Count
	}
	s.mu.Lock()
	old, ok := s.demands[key]
	s.mu.Unlock()
	if ok && old.demand.UID == pg.UID && old.copies == n && slices.Equal(old.uids, uids) {
		return
	}
	d := s.demandOf(pg, pods, copies)
	s.mu.Lock()
	s.demands[key] = groupDemand{uids: uids, copies: n, demand: d}
	s.mu.Unlock()
}

// demandOf is what a gang asks an autoscaler for: room for its pods and
// for the copies of its pods created later, in one domain when its
// topology asks for one.
func (s *autoscaler) demandOf(pg *v1alpha1.PodGroup, pods []*corev1.Pod, copies []capacity.Copies) autoscaling.Demand {
	all := append([]*corev1.Pod(nil), pods...)
	for _, c := range copies {
		for range c.Count {
			all = append(all, c.Template)
		}
	}
	sets, hash := autoscaling.PodSets(all, pg.Name, s.image)
	if c := pg.Spec.SchedulingConstraints; c != nil && len(c.Topology) > 0 {
		sets, hash = autoscaling.InOneDomain(sets, pg.Name, c.Topology[0].Key)
	}
	return autoscaling.Demand{Namespace: pg.Namespace, Name: pg.Name, UID: pg.UID, PodSets: sets, Hash: hash}
}

// WhatIfAsk is what the autoscaler would be asked for a gang (WhatIf).
type WhatIfAsk struct {
	// Asks says that the gang would ask for room for Pods pods with a
	// request of Kind; otherwise Why says why it would not.
	Asks bool
	Pods int32
	Kind string
	Why  string
}

// wouldAsk is what the next plan would decide for a gang that does not
// exist yet, given its verdict and the groups ahead of it in admission
// order: plan's rules, with its namespace's share taken by the requests
// the gangs of its namespace ahead of it hold now.
func (s *autoscaler) wouldAsk(v capacity.Verdict, d autoscaling.Demand, ahead []scheduling.GroupKey) WhatIfAsk {
	switch {
	case v.Admit:
		return WhatIfAsk{Why: "it fits: nothing to ask"}
	case len(v.Victims) > 0 || (v.Cause != capacity.CauseNoRoom && v.Cause != capacity.CauseNeverFits):
		return WhatIfAsk{Why: "it asks only while it waits for room"}
	}
	if err := s.req.Check(d); err != nil {
		return WhatIfAsk{Why: fmt.Sprintf("cannot ask the autoscaler for room for %d pods with a %s request: %v", d.Pods(), s.req.Kind(), err)}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	share := &askShare{left: s.maxPods}
	for _, k := range ahead {
		if w, ok := s.want[k]; ok && k.Namespace == d.Namespace {
			share.take(w.Pods())
			if w.Pods() > s.maxPods {
				return WhatIfAsk{Why: fmt.Sprintf("waits to ask the autoscaler: %s, ahead of it in its namespace, asks alone for %d pods, more than the %d pods a namespace asks for at once (--capacity-request-max-pods)",
					k.Name, w.Pods(), s.maxPods)}
			}
		}
	}
	if !share.fits(d.Pods(), s.maxPods) {
		return WhatIfAsk{Why: s.waitsToAsk(d, share)}
	}
	return WhatIfAsk{Asks: true, Pods: d.Pods(), Kind: s.req.Kind()}
}

// forget drops what is known of a group that is gone, or no longer waits;
// its request, if any, is withdrawn by the next plan.
func (s *autoscaler) forget(key scheduling.GroupKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.demands, key)
	delete(s.backoff, key)
	delete(s.failed, key)
	delete(s.provisioned, key)
	s.busy.forget(key)
}

// plan is the admission cycle's last step: it decides which waiting gangs
// ask for room, and rewrites their verdicts to say so. verdicts are in
// queue order. It makes no API call: the workers do.
//
//   - Only a gang that waits for capacity (InsufficientCapacity, or
//     ExceedsClusterCapacity, since nodes may be added) asks; not one that
//     preempts, is queued behind the StrictFIFO head, or waits for pods.
//   - A gang the Requester can never ask for (Check: more pod shapes than
//     a ProvisioningRequest holds) is skipped and says why; the gangs
//     behind it ask as if it were not there.
//   - The bound (--capacity-request-max-pods) is per namespace: the gangs
//     of one namespace ask whole, in queue order, while their pods fit
//     it, and once one does not, no gang of that namespace behind it asks,
//     so no autoscaler is asked for a gang that priority or FIFO would not
//     run next within its namespace. Gangs of other namespaces ask beside
//     them: no tenant's gangs hold another's share. A gang larger than the
//     bound asks alone in its namespace: when it is its namespace's first
//     to ask, it asks, and no gang of its namespace behind it does while
//     its request stands. Under StrictFIFO only the head asks.
//   - A request that stood --capacity-request-timeout without room for the
//     whole gang, that the autoscaler refused, or that could not be made
//     for that long (the namespace's quota is full), is withdrawn, and the
//     gang asks again after a backoff, during which it holds no share of
//     the bound: so every request ends, and the queue behind it moves.
func (s *autoscaler) plan(verdicts []outcome, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// Each namespace has the bound to itself; under StrictFIFO one head
	// closes every namespace.
	shares := map[string]*askShare{}
	closed := false
	want := map[scheduling.GroupKey]autoscaling.Demand{}
	var asked int32
	for i := range verdicts {
		v := &verdicts[i]
		gd, ok := s.demands[v.Key]
		if !ok {
			continue // joiners of an admitted group, which ask for nothing
		}
		if v.Admit {
			if st, ok := s.req.State(v.Key); ok {
				s.metrics.RequestAdmitted(now.Sub(st.Since))
				s.announceProvisioned(v.Key, gd.demand, st)
			}
			delete(s.backoff, v.Key)
			continue
		}
		if len(v.Victims) > 0 || (v.Cause != capacity.CauseNoRoom && v.Cause != capacity.CauseNeverFits) {
			continue
		}
		if b, ok := s.backoff[v.Key]; ok && now.Before(b.until) {
			v.Reason = scheduling.ReasonNodesNotProvisioned
			v.Message = admission.Truncate(fmt.Sprintf("%s; asking again at %s", b.message, b.until.UTC().Format(time.RFC3339)))
			if s.strict {
				closed = true
			}
			continue
		}
		share := shares[v.Key.Namespace]
		if share == nil {
			share = &askShare{left: s.maxPods}
			shares[v.Key.Namespace] = share
		}
		if closed || share.closed {
			continue
		}
		d := gd.demand
		if err := s.req.Check(d); err != nil {
			v.Reason = scheduling.ReasonNodesNotProvisioned
			v.Message = admission.Truncate(fmt.Sprintf("cannot ask the autoscaler for room for %d pods with a %s request: %v; now: %s", d.Pods(), s.req.Kind(), err, v.Message))
			continue
		}
		if !share.fits(d.Pods(), s.maxPods) {
			share.closed = true
			v.Message = admission.Truncate(s.waitsToAsk(d, share) + "; now: " + v.Message)
			continue
		}
		if s.strict {
			closed = true
		}
		if d.Pods() > s.maxPods {
			share.closed = true
		}
		st, has := s.req.State(v.Key)
		if has && st.Hash == d.Hash {
			refused := st.Failed != ""
			if refused || now.Sub(st.Since) >= s.timeout {
				reason, msg := "timeout", fmt.Sprintf("the autoscaler provided room for %d of the %d pods asked for with %s within %s (--capacity-request-timeout); request withdrawn so that it can take back the nodes it added",
					st.Provisioned, d.Pods(), st.Name, s.timeout)
				if refused {
					reason, msg = "refused", fmt.Sprintf("the autoscaler cannot provide room for the %d pods asked for with %s: %s; request withdrawn", d.Pods(), st.Name, st.Failed)
				}
				s.withdraw(v, d, reason, msg, now)
				continue
			}
			if st.Provisioned >= d.Pods() {
				s.announceProvisioned(v.Key, d, st)
			}
			v.Reason = scheduling.ReasonWaitingForNodes
			v.Message = admission.Truncate(fmt.Sprintf("asked the autoscaler for room for %d pods at %s with %s: %d of %d have room; withdrawn at %s unless all do (--capacity-request-timeout); now: %s",
				d.Pods(), st.Since.UTC().Format(time.RFC3339), st.Name, st.Provisioned, d.Pods(),
				st.Since.Add(s.timeout).UTC().Format(time.RFC3339), v.Message))
		} else {
			f, failing := s.failed[v.Key]
			if failing && now.Sub(f.since) >= s.timeout {
				s.withdraw(v, d, "failed", fmt.Sprintf("the request for room for %d pods (%s) could not be made within %s (--capacity-request-timeout): %s; request withdrawn",
					d.Pods(), s.req.Kind(), s.timeout, f.why), now)
				continue
			}
			v.Reason = scheduling.ReasonWaitingForNodes
			msg := fmt.Sprintf("asking the autoscaler for room for %d pods (%s)", d.Pods(), s.req.Kind())
			if failing {
				msg += "; making it failed: " + f.why
			}
			v.Message = admission.Truncate(msg + "; now: " + v.Message)
		}
		share.take(d.Pods())
		asked += d.Pods()
		want[v.Key] = d
	}
	for key, d := range want {
		if old, ok := s.want[key]; !ok || old.Hash != d.Hash {
			s.work.Add(key)
		} else if st, ok := s.req.State(key); !ok || st.Hash != d.Hash || st.Requested < d.Pods() {
			s.work.Add(key) // gone meanwhile: a pod preempted, or deleted by hand
		}
	}
	for key := range s.want {
		if _, ok := want[key]; !ok {
			s.work.Add(key)
		}
	}
	for _, key := range s.req.Keys() {
		if _, ok := want[key]; !ok {
			s.work.Add(key)
		}
	}
	s.want = want
	s.metrics.PodsRequested(asked)
}

// askShare is what one namespace's gangs asked for in one plan.
type askShare struct {
	// left is what is left of the bound; asked, what its gangs asked for.
	left, asked int32
	// closed: a gang of the namespace did not fit what was left, or asked
	// alone, and none behind it asks.
	closed bool
}

// fits says whether a gang of n pods may ask from what is left of the
// share, of a bound of max: within it, or alone, larger than the bound,
// when no gang of the namespace asked before it.
func (sh *askShare) fits(n, max int32) bool {
	return n <= sh.left || (n > max && sh.asked == 0)
}

// take counts a gang of n pods that asks.
func (sh *askShare) take(n int32) {
	sh.left -= n
	sh.asked += n
}

// waitsToAsk says why a gang waits to ask: the gangs of its namespace
// ahead of it hold the share.
func (s *autoscaler) waitsToAsk(d autoscaling.Demand, sh *askShare) string {
	return fmt.Sprintf("waits to ask the autoscaler for room for %d pods: gangs of its namespace ahead of it asked for %d of the %d pods a namespace asks for at once (--capacity-request-max-pods)",
		d.Pods(), sh.asked, s.maxPods)
}

// announceProvisioned records, once per request, that the room is there:
// the autoscaler provided all of it, or the gang fits now while its
// request stands (new nodes may take the gang before kube-scheduler binds
// the capacity-request pods to them). The message says which. Called with
// s.mu held.
func (s *autoscaler) announceProvisioned(key scheduling.GroupKey, d autoscaling.Demand, st autoscaling.State) {
	if s.provisioned[key] == st.Hash {
		return
	}
	s.provisioned[key] = st.Hash
	msg := fmt.Sprintf("the autoscaler provided room for the gang, asked for with %s at %s: %d of the %d pods asked for have it",
		st.Name, st.Since.UTC().Format(time.RFC3339), st.Provisioned, st.Requested)
	if st.Provisioned < st.Requested {
		msg = fmt.Sprintf("the gang fits now, with its request %s of %s standing: %d of the %d pods asked for had room when it was admitted",
			st.Name, st.Since.UTC().Format(time.RFC3339), st.Provisioned, st.Requested)
	}
	s.announce(key, d.UID, admission.Event{Type: corev1.EventTypeNormal, Reason: scheduling.EventCapacityProvisioned, Message: msg})
}

// withdraw ends a request that timed out, was refused or could not be
// made (reason, for the metric): the verdict says why (msg), and the gang
// waits out its backoff. The workers delete the request, since it is no
// longer wanted. Called with s.mu held.
func (s *autoscaler) withdraw(v *outcome, d autoscaling.Demand, reason, msg string, now time.Time) {
	b := s.backoff[v.Key]
	b.failures++
	b.until = now.Add(min(capacityRequestBackoff<<(b.failures-1), capacityRequestMaxBackoff))
	b.message = msg
	s.backoff[v.Key] = b
	delete(s.provisioned, v.Key)
	delete(s.failed, v.Key)
	s.metrics.RequestWithdrawn(reason)
	s.announce(v.Key, d.UID, admission.Event{Type: corev1.EventTypeWarning, Reason: scheduling.EventCapacityRequestWithdrawn, Message: b.message})
	v.Reason = scheduling.ReasonNodesNotProvisioned
	v.Message = admission.Truncate(fmt.Sprintf("%s; asking again at %s", b.message, b.until.UTC().Format(time.RFC3339)))
}

// next makes one group's request what the last plan decided.
func (s *autoscaler) next(ctx context.Context) bool {
	key, quit := s.work.Get()
	if quit {
		return false
	}
	defer s.work.Done(key)
	if err := s.sync(ctx, key); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Capacity request", "podgroup", key)
		s.work.AddRateLimited(key)
		return true
	}
	s.work.Forget(key)
	return true
}

func (s *autoscaler) sync(ctx context.Context, key scheduling.GroupKey) error {
	defer s.busy.lock(key)()
	s.mu.Lock()
	d, wanted := s.want[key]
	s.mu.Unlock()
	if !wanted {
		// Withdrawing what does not exist costs no API call.
		klog.FromContext(ctx).V(2).Info("Withdrawing capacity request", "podgroup", key)
		return s.req.Withdraw(ctx, key)
	}
	st, had := s.req.State(key)
	if had && st.Hash == d.Hash && st.Requested >= d.Pods() {
		return nil
	}
	err := s.req.Request(ctx, d)
	s.mu.Lock()
	if err != nil {
		f, ok := s.failed[key]
		if !ok {
			f.since = s.clock.Now()
		}
		f.why = err.Error()
		s.failed[key] = f
	} else {
		delete(s.failed, key)
	}
	s.mu.Unlock()
	if err != nil {
		s.poke() // the group's message says why
		return err
	}
	if !had || st.Hash != d.Hash {
		s.metrics.Requested(s.req.Kind(), d.Pods())
		s.announce(key, d.UID, admission.Event{Type: corev1.EventTypeNormal, Reason: scheduling.EventCapacityRequested, Message: fmt.Sprintf(
			"asked the autoscaler for room for %d pods, in %d shapes, with a %s request, since they do not fit the nodes there are",
			d.Pods(), len(d.PodSets), s.req.Kind())})
	}
	return nil
}

// beforeRelease withdraws the group's request before any of its pods is
// released: the gang was placed on the room the request holds, which must
// be free when kube-scheduler sees the released pods.
func (s *autoscaler) beforeRelease(ctx context.Context, key scheduling.GroupKey) error {
	s.mu.Lock()
	delete(s.want, key)
	delete(s.demands, key)
	s.mu.Unlock()
	// A worker making the request now finishes first; none starts again,
	// since it is no longer wanted.
	defer s.busy.lock(key)()
	return s.req.Withdraw(ctx, key)
}

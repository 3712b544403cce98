package podgroup

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// capacityAdmission is --admission=capacity: a complete gang is released
// only once an admission cycle has placed every pod where it fits, on one
// snapshot of the cluster (capacityqueue.go, placements.go); each pod is
// pinned to its node in the patch that releases it, and capacity is
// reserved for the pods of createdLater roles (reservations.go).
type capacityAdmission struct {
	// tracker holds what every node has and what holds it: Muster's pods,
	// the pods it does not manage (podStore), placements and reservations.
	tracker *capacity.Tracker
	queue   *admissionQueue
	// filters are kube-scheduler's own filters, which place gangs on the
	// tracker's snapshots; set before the first cycle.
	filters  *capacity.Filters
	podStore *capacity.PodStore

	kube               kubernetes.Interface
	strategy           capacity.QueueingStrategy
	reservationTimeout time.Duration
	// preemption, preemptUnmanaged and preemptionMinRuntime are
	// --preemption, --preempt-unmanaged and --preemption-min-runtime.
	preemption           bool
	preemptUnmanaged     bool
	preemptionMinRuntime time.Duration
	recorder             record.EventRecorder
	clock                clock.PassiveClock
	// enqueue hands a group to the sync workers, once a cycle decided for it.
	enqueue func(key scheduling.GroupKey)
	// held remembers the placed joiners that stay gated (heldjoiners.go).
	held heldPlacements
	// autoscale asks an autoscaler for room for gangs that do not fit the
	// nodes there are (autoscaling.go); nil with --autoscaling=off.
	autoscale *autoscaler
	// metrics are the controller's (metrics.go).
	metrics *controllerMetrics
}

var _ admitter = &capacityAdmission{}

// newCapacityAdmission builds capacity-aware admission for c, fed by the
// node informer, and returns what Run must wait for.
func newCapacityAdmission(c *Controller, nodes coreinformers.NodeInformer) (*capacityAdmission, []cache.InformerSynced, error) {
	if nodes == nil {
		return nil, nil, fmt.Errorf("capacity-aware admission needs a node informer")
	}
	a := &capacityAdmission{
		tracker:              capacity.NewTracker(c.cfg.FastRelease),
		queue:                newAdmissionQueue(),
		kube:                 c.kube,
		strategy:             c.cfg.QueueingStrategy,
		reservationTimeout:   c.cfg.ReservationTimeout,
		preemption:           c.cfg.Preemption,
		preemptUnmanaged:     c.cfg.PreemptUnmanaged,
		preemptionMinRuntime: c.cfg.PreemptionMinRuntime,
		recorder:             c.recorder,
		clock:                c.clock,
		enqueue:              c.queue.Add,
		metrics:              c.metrics,
	}
	if c.requester != nil {
		a.autoscale = newAutoscaler(c.requester, c.cfg, c.recorder, c.clock, a.queue.poke, c.metrics)
	}
	a.podStore = capacity.NewPodStore(a.tracker, a.queue.poke)
	synced := []cache.InformerSynced{nodes.Informer().HasSynced, a.podStore.HasSynced}
	nodeReg, err := nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    a.setNode,
		UpdateFunc: func(_, obj interface{}) { a.setNode(obj) },
		DeleteFunc: a.deleteNode,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("watching nodes: %w", err)
	}
	return a, append(synced, nodeReg.HasSynced), nil
}

// start lists and watches the pods Muster does not manage, which hold
// capacity too (they are kept as compact holdings, never as pod objects),
// and runs admission cycles once the caches have synced.
func (a *capacityAdmission) start(ctx context.Context, wg *sync.WaitGroup, synced <-chan struct{}) {
	r := capacity.NewUnmanagedPodReflector(a.kube, scheduling.PodGroupLabel, a.podStore)
	wg.Go(func() { r.RunWithContext(ctx) })
	requestsSynced := func() bool { return true }
	if a.autoscale != nil {
		requestsSynced = a.autoscale.start(ctx, wg)
	}
	wg.Go(func() {
		select {
		case <-ctx.Done():
			return
		case <-synced:
		}
		if !cache.WaitForCacheSync(ctx.Done(), requestsSynced) {
			return
		}
		if a.filters = a.startFilters(ctx); a.filters == nil {
			return
		}
		a.runAdmission(ctx)
	})
}

// startFilters builds and starts the scheduler's filters, retrying until
// they are up or ctx ends (nil then): with no filters, nothing is placed.
func (a *capacityAdmission) startFilters(ctx context.Context) *capacity.Filters {
	logger := klog.FromContext(ctx)
	var filters *capacity.Filters
	err := wait.PollUntilContextCancel(ctx, 2*time.Second, true, func(ctx context.Context) (bool, error) {
		dra, err := capacity.DRAServed(a.kube)
		if err == nil {
			filters, err = capacity.NewFilters(ctx, a.kube, dra)
		}
		if err == nil {
			err = filters.Start(ctx)
		}
		if err != nil {
			logger.Error(err, "Starting the scheduler's filters for placement; retrying")
			return false, nil
		}
		logger.Info("Placement runs the scheduler's filters", "dynamicResources", dra)
		return true, nil
	})
	if err != nil {
		return nil
	}
	return filters
}

// admitGang admits a complete gang once a cycle has placed it (placeGang).
func (a *capacityAdmission) admitGang(key scheduling.GroupKey, pg *v1alpha1.PodGroup, v *podView, need, later int32, now time.Time) (bool, string, string) {
	if w, placed := a.placeGang(key, pg, v, need, now); !placed {
		return false, w.Reason, w.Message
	}
	msg := fmt.Sprintf("%d of %d needed pods are present and fit; each is pinned to the node reserved for it and released", v.active, need)
	if later > 0 {
		msg = fmt.Sprintf("%d pods are present and fit, and capacity is reserved for the %d pods created later; each present pod is pinned to the node reserved for it and released", v.active, later)
	}
	_, free, why := a.splitUnmodelled(activeGated(v))
	msg += unpinnedNote(free, why)
	return true, scheduling.ReasonGangFits, msg
}

// admitJoiners serves the group's reservations (reservations.go), then
// places the pods that joined it (placements.go).
func (a *capacityAdmission) admitJoiners(key scheduling.GroupKey, pg *v1alpha1.PodGroup, v *podView, now time.Time) time.Duration {
	next := a.reserve(pg, v, now)
	next = soonest(next, a.placeJoiners(key, pg, v, now))
	return next
}

func (a *capacityAdmission) withdraw(key scheduling.GroupKey) { a.queue.withdraw(key) }

// drop forgets the group's place in the queue, any decision not yet
// recorded, and the reservation assumed for that decision.
func (a *capacityAdmission) drop(key scheduling.GroupKey) {
	if a.queue.forget(key) {
		a.tracker.Forget(key)
	}
	if a.autoscale != nil {
		a.autoscale.forget(key)
	}
	a.queue.poke()
}

// beforeRelease withdraws the group's capacity request, whose room the
// release takes (autoscaling.go).
func (a *capacityAdmission) beforeRelease(ctx context.Context, key scheduling.GroupKey) error {
	if a.autoscale == nil {
		return nil
	}
	return a.autoscale.beforeRelease(ctx, key)
}

func (a *capacityAdmission) recorded(key scheduling.GroupKey) { a.queue.recorded(key) }

// releaseTo releases a placed pod, pinned to its node, and a pod that
// placement cannot check, unpinned (unmodelled.go).
func (a *capacityAdmission) releaseTo(placed map[types.UID]string, p *corev1.Pod) (string, bool) {
	if node := placed[p.UID]; node != "" {
		return node, true
	}
	return "", a.unmodelled(p) != ""
}

// explainStalled runs the scheduler's filters for the pod on its node.
func (a *capacityAdmission) explainStalled(p *corev1.Pod, node string) string {
	if a.filters == nil {
		return ""
	}
	return a.tracker.Explain(a.filters, p, node)
}

// unreservedLater is none: every missing pod of a createdLater role has a
// reserved place, which holdShort counts as such.
func (a *capacityAdmission) unreservedLater(*v1alpha1.PodGroup, *podView) int32 { return 0 }

// observePod tells the tracker what one of Muster's pods holds, and asks
// for a cycle: what it frees may let a waiting gang fit.
func (a *capacityAdmission) observePod(p *corev1.Pod, gone bool) {
	if key, ok := podGroupKey(p); ok && !gone {
		a.tracker.SetManagedPod(key, p, scheduling.HasGate(p))
	} else {
		// Gone, or the label is gone: the pod has left the labelled
		// informer's view.
		a.tracker.RemoveManagedPod(p.UID)
	}
	a.queue.poke()
}

// observeGroup tells the tracker what a group's status holds.
func (a *capacityAdmission) observeGroup(key scheduling.GroupKey, pg *v1alpha1.PodGroup) {
	if pg == nil {
		a.tracker.SetGroupState(key, nil)
		a.tracker.ForgetGroup(key)
		a.queue.forget(key)
		a.held.forget(key)
		if a.autoscale != nil {
			a.autoscale.forget(key)
		}
		a.queue.poke()
		return
	}
	// Placements first: a place claimed from a reservation is held twice
	// for a moment, never not at all.
	a.tracker.SetPlacements(key, placementsByUID(pg))
	a.tracker.SetReservations(key, slotsOf(pg))
	a.tracker.SetGroupState(key, groupState(pg))
}

// groupState is what preemption needs of a group: admitted (and not
// finished) groups may be victims, preempted ones are victims whose pods
// are going.
func groupState(pg *v1alpha1.PodGroup) *capacity.GroupState {
	st := &capacity.GroupState{UID: pg.UID, SpecPriority: pg.Spec.Priority}
	if isFinished(pg) {
		return st
	}
	st.Admitted = isAdmitted(pg)
	st.Preempted = !st.Admitted && meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionPreempted)
	if at := pg.Status.AdmissionTime; at != nil {
		st.Since = at.Time
	}
	return st
}

func (a *capacityAdmission) setNode(obj interface{}) {
	if n, ok := obj.(*corev1.Node); ok {
		a.tracker.SetNode(n)
		a.queue.poke()
	}
}

func (a *capacityAdmission) deleteNode(obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if n, ok := obj.(*corev1.Node); ok {
		a.tracker.RemoveNode(n.Name)
	}
}

package capacityadmission

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/clock"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
	"github.com/muster-dev/muster/pkg/controller/autoscaling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// Mode is --admission=capacity: a complete gang is released
// only once an admission cycle has placed every pod where it fits, on one
// snapshot of the cluster (queue.go, placements.go); each pod is
// pinned to its node in the patch that releases it, and capacity is
// reserved for the pods of createdLater roles (reservations.go).
type Mode struct {
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
	clock                clock.PassiveClock
	// enqueue hands a group to the sync workers, once a cycle decided for it.
	enqueue func(key scheduling.GroupKey)
	// held remembers the placed joiners that stay gated (heldjoiners.go).
	held heldPlacements
	// victimRefs remembers the victims in other namespaces of the
	// preemptions this replica decided, by ref (victimrefs.go).
	victimRefs victimRefs
	// autoscale asks an autoscaler for room for gangs that do not fit the
	// nodes there are (autoscaling.go); nil with --autoscaling=off.
	autoscale *autoscaler
	metrics   Metrics
}

var _ admission.Mode = &Mode{}

// Options are capacity admission's settings, from the controller's flags.
type Options struct {
	// FastRelease makes a deleted pod's capacity free at once (KEP-6143).
	FastRelease bool
	Strategy    capacity.QueueingStrategy
	// ReservationTimeout is how long a place reserved for a pod of a
	// createdLater role waits for it, unless its role says otherwise.
	ReservationTimeout time.Duration
	// Preemption, PreemptUnmanaged and PreemptionMinRuntime are
	// --preemption, --preempt-unmanaged and --preemption-min-runtime.
	Preemption           bool
	PreemptUnmanaged     bool
	PreemptionMinRuntime time.Duration
	// Autoscaling, when not nil, asks an autoscaler for room for gangs
	// that do not fit the nodes there are.
	Autoscaling *AutoscalingOptions
}

// AutoscalingOptions are --capacity-request-timeout, -max-pods and -image,
// and the Requester that makes the requests.
type AutoscalingOptions struct {
	Requester autoscaling.Requester
	Timeout   time.Duration
	MaxPods   int32
	Image     string
}

// Env is what capacity admission is given of the controller: clients, the
// node informer, and where its decisions go.
type Env struct {
	Kube  kubernetes.Interface
	Nodes coreinformers.NodeInformer
	// Announce says on a group what the mode did for it outside a sync.
	Announce admission.Announce
	Clock    clock.PassiveClock
	// Enqueue hands a group to the sync workers, once a cycle decided for it.
	Enqueue func(key scheduling.GroupKey)
	Metrics Metrics
}

// New builds capacity-aware admission, fed by the node informer, and
// returns what the controller must wait for before its first sync.
func New(opts Options, env Env) (*Mode, []cache.InformerSynced, error) {
	if env.Nodes == nil {
		return nil, nil, fmt.Errorf("capacity-aware admission needs a node informer")
	}
	a := &Mode{
		tracker:              capacity.NewTracker(opts.FastRelease),
		queue:                newAdmissionQueue(),
		kube:                 env.Kube,
		strategy:             opts.Strategy,
		reservationTimeout:   opts.ReservationTimeout,
		preemption:           opts.Preemption,
		preemptUnmanaged:     opts.PreemptUnmanaged,
		preemptionMinRuntime: opts.PreemptionMinRuntime,
		clock:                env.Clock,
		enqueue:              env.Enqueue,
		metrics:              env.Metrics,
	}
	if as := opts.Autoscaling; as != nil {
		a.autoscale = newAutoscaler(*as, opts.Strategy == capacity.StrictFIFO, env.Announce, env.Clock, env.Metrics, a.queue.poke)
	}
	a.podStore = capacity.NewPodStore(a.tracker, a.queue.poke)
	synced := []cache.InformerSynced{env.Nodes.Informer().HasSynced, a.podStore.HasSynced}
	nodeReg, err := env.Nodes.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    a.setNode,
		UpdateFunc: a.updateNode,
		DeleteFunc: a.deleteNode,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("watching nodes: %w", err)
	}
	return a, append(synced, nodeReg.HasSynced), nil
}

// Start lists and watches the pods Muster does not manage, which hold
// capacity too (they are kept as compact holdings, never as pod objects),
// and runs admission cycles once the caches have synced.
func (a *Mode) Start(ctx context.Context, wg *sync.WaitGroup, synced <-chan struct{}) {
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
func (a *Mode) startFilters(ctx context.Context) *capacity.Filters {
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

// AdmitGang admits a complete gang once a cycle has placed it (placeGang).
func (a *Mode) AdmitGang(g admission.Group, need, later int32, now time.Time) admission.Decision {
	d, placed := a.placeGang(g, need, now)
	if !placed {
		return d
	}
	msg := fmt.Sprintf("%d of %d needed pods are present and fit; each is pinned to the node reserved for it and released", g.Active, need)
	if later > 0 {
		msg = fmt.Sprintf("%d pods are present and fit, and capacity is reserved for the %d pods created later; each present pod is pinned to the node reserved for it and released", g.Active, later)
	}
	_, free, why := a.splitUnmodelled(g.ActiveGated())
	d.Admitted, d.Reason, d.Message = true, scheduling.ReasonGangFits, msg+unpinnedNote(free, why)
	return d
}

// AdmitJoiners serves the group's reservations (reservations.go),
// then places the pods that joined it (placements.go), on a copy
// of what the group's status holds: the decision's Places.
func (a *Mode) AdmitJoiners(g admission.Group, now time.Time) admission.Decision {
	var d admission.Decision
	places := &admission.Places{
		Placements:   slices.Clone(g.PodGroup.Status.Placements),
		Reservations: slices.Clone(g.PodGroup.Status.Reservations),
	}
	d.Recheck = a.reserve(g, places, &d, now)
	d.Recheck = admission.Soonest(d.Recheck, a.placeJoiners(g, places, &d, now))
	d.Places = places
	return d
}

func (a *Mode) Withdraw(key scheduling.GroupKey) { a.queue.withdraw(key) }

// Drop forgets the group's place in the queue, any decision not yet
// recorded, and the reservation assumed for that decision.
func (a *Mode) Drop(key scheduling.GroupKey) {
	if a.queue.forget(key) {
		a.tracker.Forget(key)
	}
	if a.autoscale != nil {
		a.autoscale.forget(key)
	}
	a.queue.poke()
}

// BeforeRelease withdraws the group's capacity request, whose room the
// release takes (autoscaling.go).
func (a *Mode) BeforeRelease(ctx context.Context, key scheduling.GroupKey) error {
	if a.autoscale == nil {
		return nil
	}
	return a.autoscale.beforeRelease(ctx, key)
}

func (a *Mode) Recorded(key scheduling.GroupKey) { a.queue.recorded(key) }

// ReleaseTo releases a placed pod, pinned to its node, and a pod that
// placement cannot check, unpinned (unmodelled.go).
func (a *Mode) ReleaseTo(placed map[types.UID]string, p *corev1.Pod) (string, bool) {
	if node := placed[p.UID]; node != "" {
		return node, true
	}
	return "", a.unmodelled(p) != ""
}

// ExplainStalled runs the scheduler's filters for the pod on its node.
func (a *Mode) ExplainStalled(p *corev1.Pod, node string) string {
	if a.filters == nil {
		return ""
	}
	return a.tracker.Explain(a.filters, p, node)
}

// PreemptedForReleased asks the tracker for a released pod of Muster's
// that waits for the victim's node.
func (a *Mode) PreemptedForReleased(victim *corev1.Pod, key scheduling.GroupKey) bool {
	return a.tracker.ReleasedWaitingFor(victim, key)
}

// UnreservedLater is none: every missing pod of a createdLater role has a
// reserved place, which the controller's holdShort counts as such.
func (a *Mode) UnreservedLater(admission.Group) int32 { return 0 }

// ObservePod tells the tracker what one of Muster's pods holds, and asks
// for a cycle: what it frees may let a waiting gang fit.
func (a *Mode) ObservePod(p *corev1.Pod, gone bool) {
	if key, ok := scheduling.GroupKeyOf(p); ok && !gone {
		a.tracker.SetManagedPod(key, p, scheduling.HasGate(p))
	} else {
		// Gone, or the label is gone: the pod has left the labelled
		// informer's view.
		a.tracker.RemoveManagedPod(p.UID)
	}
	a.queue.poke()
}

// ObserveGroup tells the tracker what a group's status holds.
func (a *Mode) ObserveGroup(key scheduling.GroupKey, pg *v1alpha1.PodGroup) {
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
	a.tracker.SetPlacements(key, admission.PlacementsByUID(pg))
	a.tracker.SetReservations(key, slotsOf(pg))
	a.tracker.SetGroupState(key, groupState(pg))
}

// groupState is what preemption needs of a group: admitted (and not
// finished) groups may be victims, preempted ones are victims whose pods
// are going.
func groupState(pg *v1alpha1.PodGroup) *capacity.GroupState {
	st := &capacity.GroupState{UID: pg.UID, SpecPriority: pg.Spec.Priority}
	if admission.IsFinished(pg) {
		return st
	}
	st.Admitted = admission.IsAdmitted(pg)
	st.Preempted = !st.Admitted && meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionPreempted)
	if at := pg.Status.AdmissionTime; at != nil {
		st.Since = at.Time
	}
	return st
}

func (a *Mode) setNode(obj interface{}) {
	if n, ok := obj.(*corev1.Node); ok {
		a.tracker.SetNode(n)
		a.queue.poke()
	}
}

// updateNode records a node's new state, and asks for a cycle only when
// the update changes what the scheduler's filters read of it (its labels,
// taints, allocatable, conditions, unschedulable, annotations), as
// kube-scheduler's queueing hints judge node updates: a status update that
// only renews the node's heartbeat cannot let a waiting gang fit, and on a
// cluster of many nodes such updates would run a cycle every few hundred
// milliseconds over every waiting gang.
func (a *Mode) updateNode(oldObj, obj interface{}) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	a.tracker.SetNode(n)
	if old, ok := oldObj.(*corev1.Node); !ok || len(framework.NodeSchedulingPropertiesChange(n, old)) > 0 {
		a.queue.poke()
	}
}

func (a *Mode) deleteNode(obj interface{}) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if n, ok := obj.(*corev1.Node); ok {
		a.tracker.RemoveNode(n.Name)
	}
}

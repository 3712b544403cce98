package capacity

import (
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/ptr"
)

// Devices (DRA) that preemption's victims hold count as free while a
// preemptor is placed. The DynamicResources plugin reads which devices are
// allocated once per pod, in PreFilter, from the shared DRA manager's
// ResourceClaims: the devices of every allocated claim (the informer's)
// and of every allocation in flight (what Reserve picked). victimDevices
// wraps that manager, and subtracts from the answer the devices of the
// claims that only the pods taken off the snapshot use:
//
//   - a claim is freed when every consumer in status.reservedFor is a pod
//     taken off, and either it has one or it was generated from a template
//     for such a pod (the pod controls it): the ResourceClaim controller
//     deallocates a claim once its last consumer is gone, and deletes the
//     claims it generated for a pod;
//   - a claim that any other pod (or a PodGroup) is reserved for stays
//     allocated;
//   - a device that an allocation in flight for a claim not freed has
//     picked stays allocated: the preemptor that took it holds it.
//
// Snapshot.takeOff registers the pods it takes off and its undo withdraws
// them, so nested take-offs undo exactly. What is freed is worked out once
// per change of that set, from the claims of those pods only (never from
// every claim), and each PreFilter pays only for the freed devices and the
// allocations in flight. The subtraction applies only while active: while a
// preemptor is placed (preemption.try). A gang that is admitted, and so
// released, sees the devices as the cluster has them: a victim's devices
// are promised to the preemptor that evicts it, and to no gang that would
// be released onto them before they are deallocated.
type victimDevices struct {
	fwk.SharedDRAManager
	claims *claimsFreeing
}

var _ fwk.SharedDRAManager = &victimDevices{}

func newVictimDevices(m fwk.SharedDRAManager) *victimDevices {
	return &victimDevices{SharedDRAManager: m, claims: &claimsFreeing{
		ResourceClaimTracker: m.ResourceClaims(),
		consumable:           utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity),
		evicted:              map[types.UID]int{},
		used:                 map[types.UID]*usedClaim{},
		pending:              map[types.UID]struct{}{},
	}}
}

// ResourceClaims is the claims as the plugin is to see them.
func (v *victimDevices) ResourceClaims() fwk.ResourceClaimTracker { return v.claims }

// claimsFreeing is the ResourceClaimTracker that subtracts the freed
// devices while active.
type claimsFreeing struct {
	fwk.ResourceClaimTracker
	// consumable is the DRAConsumableCapacity gate, with which the tracker
	// counts a shared device's allocations apart.
	consumable bool

	mu     sync.Mutex
	active bool
	// evicted counts the pods taken off, by UID, once per take-off.
	evicted map[types.UID]int
	// used are the claims those pods use, by UID, counted the same way.
	used map[types.UID]*usedClaim
	// pending are the claims whose allocation in flight Reserve signalled
	// through this tracker, and that no Unreserve has removed yet.
	pending map[types.UID]struct{}
	// freed is what the evicted pods free; valid unless stale.
	freed *freedClaims
	// idle is set while a gang is judged on the idle cluster (idleFor):
	// every device counts as free but those that the allocations
	// signalled since, in idlePending, picked.
	idle        bool
	idlePending map[types.UID]struct{}
}

type usedClaim struct {
	claim *resourcev1.ResourceClaim
	refs  int
}

// freedClaims are the claims that the evicted pods alone use, and the
// devices their allocations (as the informer shows them) hold.
type freedClaims struct {
	uids sets.Set[types.UID]
	held deviceHoldings
}

// deviceHoldings are what allocations hold, as the tracker counts them:
// whole devices, and with consumable capacity each share of a device that
// allows several, with the capacity it consumes.
type deviceHoldings struct {
	devices    []structured.DeviceID
	shares     []structured.SharedDeviceID
	capacities []structured.DeviceConsumedCapacity
}

// add counts the devices of an allocation as the scheduler's tracker does:
// devices with admin access are not allocated, and without consumable
// capacity a share counts as its whole device. Such a device may have
// other shares, of claims not freed, so it is left allocated.
func (h *deviceHoldings) add(a *resourcev1.AllocationResult, consumable bool) {
	h.addResults(a, consumable, false)
}

// addHeld counts what an allocation holds, a share without consumable
// capacity as its whole device: what is allocated, not what may be freed.
func (h *deviceHoldings) addHeld(a *resourcev1.AllocationResult, consumable bool) {
	h.addResults(a, consumable, true)
}

func (h *deviceHoldings) addResults(a *resourcev1.AllocationResult, consumable, sharesWhole bool) {
	if a == nil {
		return
	}
	for _, r := range a.Devices.Results {
		if ptr.Deref(r.AdminAccess, false) {
			continue
		}
		id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
		switch {
		case r.ShareID == nil, sharesWhole && !consumable:
			h.devices = append(h.devices, id)
		case consumable:
			h.shares = append(h.shares, structured.MakeSharedDeviceID(id, r.ShareID))
			if r.ConsumedCapacity != nil {
				h.capacities = append(h.capacities, structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
			}
		}
	}
}

func (h *deviceHoldings) empty() bool {
	return len(h.devices) == 0 && len(h.shares) == 0 && len(h.capacities) == 0
}

// hide registers pods as taken off and returns what withdraws them.
func (c *claimsFreeing) hide(pods []*corev1.Pod) (undo func()) {
	var claims []*resourcev1.ResourceClaim
	var uids []types.UID
	for _, p := range pods {
		if p.UID == "" {
			continue // a stand-in for a reserved place
		}
		uids = append(uids, p.UID)
		for name, mustCheckOwner := range resourceclaim.PodClaims(p) {
			claim, err := c.ResourceClaimTracker.Get(p.Namespace, name)
			if err != nil || (mustCheckOwner && !metav1.IsControlledBy(claim, p)) {
				continue // not created yet, or another pod's of that name
			}
			claims = append(claims, claim)
		}
	}
	if len(uids) == 0 {
		return func() {}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, uid := range uids {
		c.evicted[uid]++
	}
	for _, claim := range claims {
		if u := c.used[claim.UID]; u != nil {
			u.refs++
		} else {
			c.used[claim.UID] = &usedClaim{claim: claim, refs: 1}
		}
	}
	c.freed = nil
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, uid := range uids {
			if c.evicted[uid]--; c.evicted[uid] <= 0 {
				delete(c.evicted, uid)
			}
		}
		for _, claim := range claims {
			if u := c.used[claim.UID]; u != nil {
				if u.refs--; u.refs <= 0 {
					delete(c.used, claim.UID)
				}
			}
		}
		c.freed = nil
	}
}

// setActive turns the subtraction on or off.
func (c *claimsFreeing) setActive(on bool) {
	c.mu.Lock()
	c.active = on
	c.mu.Unlock()
}

// reset forgets every pod taken off, as the end of a cycle does.
func (c *claimsFreeing) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.active = false
	clear(c.evicted)
	clear(c.used)
	c.freed = nil
}

// freedLocked works out, once per change of the evicted pods, which of
// their claims they alone use.
func (c *claimsFreeing) freedLocked() *freedClaims {
	if c.freed != nil {
		return c.freed
	}
	f := &freedClaims{uids: sets.New[types.UID]()}
	for uid, u := range c.used {
		if c.onlyEvictedUse(u.claim) {
			f.uids.Insert(uid)
			f.held.add(u.claim.Status.Allocation, c.consumable)
		}
	}
	c.freed = f
	return f
}

// onlyEvictedUse reports whether every consumer of claim is an evicted pod
// and it has one, or was generated for one.
func (c *claimsFreeing) onlyEvictedUse(claim *resourcev1.ResourceClaim) bool {
	for _, r := range claim.Status.ReservedFor {
		if r.APIGroup != "" || r.Resource != "pods" || c.evicted[r.UID] == 0 {
			return false
		}
	}
	if len(claim.Status.ReservedFor) > 0 {
		return true
	}
	owner := metav1.GetControllerOfNoCopy(claim)
	return owner != nil && owner.APIVersion == "v1" && owner.Kind == "Pod" && c.evicted[owner.UID] > 0
}

// subtraction is what the answers leave out now: the freed claims'
// devices, and those that their allocations in flight picked (a victim's
// pod pinned but not bound, whose devices a replay reserved), less the
// whole devices that other allocations in flight picked. Nil when nothing
// is left out.
func (c *claimsFreeing) subtraction() *deviceHoldings {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.active || len(c.used) == 0 {
		return nil
	}
	f := c.freedLocked()
	if f.uids.Len() == 0 {
		return nil
	}
	out := deviceHoldings{devices: slices.Clone(f.held.devices), shares: slices.Clone(f.held.shares), capacities: slices.Clone(f.held.capacities)}
	var kept sets.Set[structured.DeviceID]
	for uid := range c.pending {
		a := c.ResourceClaimTracker.GetPendingAllocation(uid)
		switch {
		case a == nil:
			delete(c.pending, uid) // allocated or withdrawn since
		case f.uids.Has(uid):
			out.add(a, c.consumable)
		default:
			var in deviceHoldings
			in.add(a, c.consumable)
			if kept == nil {
				kept = sets.New[structured.DeviceID]()
			}
			kept.Insert(in.devices...)
		}
	}
	if kept.Len() > 0 {
		devices := make([]structured.DeviceID, 0, len(out.devices))
		for _, d := range out.devices {
			if !kept.Has(d) {
				devices = append(devices, d)
			}
		}
		out.devices = devices
	}
	if out.empty() {
		return nil
	}
	return &out
}

// idleFor runs judge with every device free but those the allocations it
// makes pick: the devices of the idle cluster, where no pod holds one.
func (c *claimsFreeing) idleFor(judge func()) {
	c.mu.Lock()
	c.idle, c.idlePending = true, map[types.UID]struct{}{}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.idle, c.idlePending = false, nil
		c.mu.Unlock()
	}()
	judge()
}

// idleHeld is what the allocations in flight since idleFor began hold,
// counted as the scheduler's tracker counts them (a share without
// consumable capacity holds its whole device); nil when not idle.
func (c *claimsFreeing) idleHeld() *deviceHoldings {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.idle {
		return nil
	}
	h := &deviceHoldings{}
	for uid := range c.idlePending {
		h.addHeld(c.ResourceClaimTracker.GetPendingAllocation(uid), c.consumable)
	}
	return h
}

// ListAllAllocatedDevices is the tracker's answer less the freed devices;
// while idle, only what the idle judgement picked.
func (c *claimsFreeing) ListAllAllocatedDevices() (sets.Set[structured.DeviceID], error) {
	if h := c.idleHeld(); h != nil {
		return sets.New(h.devices...), nil
	}
	all, err := c.ResourceClaimTracker.ListAllAllocatedDevices()
	if err != nil {
		return all, err
	}
	if sub := c.subtraction(); sub != nil {
		all.Delete(sub.devices...)
	}
	return all, nil
}

// GatherAllocatedState is the tracker's answer less the freed devices,
// shares and consumed capacity.
func (c *claimsFreeing) GatherAllocatedState() (*structured.AllocatedState, error) {
	if h := c.idleHeld(); h != nil {
		st := &structured.AllocatedState{
			AllocatedDevices:         sets.New(h.devices...),
			AllocatedSharedDeviceIDs: sets.New(h.shares...),
			AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
		}
		for _, cc := range h.capacities {
			st.AggregatedCapacity.Insert(cc)
		}
		return st, nil
	}
	st, err := c.ResourceClaimTracker.GatherAllocatedState()
	if err != nil || st == nil {
		return st, err
	}
	if sub := c.subtraction(); sub != nil {
		st.AllocatedDevices.Delete(sub.devices...)
		st.AllocatedSharedDeviceIDs.Delete(sub.shares...)
		for _, cc := range sub.capacities {
			st.AggregatedCapacity.Remove(cc)
		}
	}
	return st, nil
}

// SignalClaimPendingAllocation records the claim as in flight.
func (c *claimsFreeing) SignalClaimPendingAllocation(uid types.UID, claim *resourcev1.ResourceClaim) error {
	if err := c.ResourceClaimTracker.SignalClaimPendingAllocation(uid, claim); err != nil {
		return err
	}
	c.mu.Lock()
	c.pending[uid] = struct{}{}
	if c.idle {
		c.idlePending[uid] = struct{}{}
	}
	c.mu.Unlock()
	return nil
}

// MaybeRemoveClaimPendingAllocation forgets the claim once it is no
// longer in flight.
func (c *claimsFreeing) MaybeRemoveClaimPendingAllocation(uid types.UID, force bool) bool {
	deleted := c.ResourceClaimTracker.MaybeRemoveClaimPendingAllocation(uid, force)
	if deleted {
		c.mu.Lock()
		delete(c.pending, uid)
		delete(c.idlePending, uid)
		c.mu.Unlock()
	}
	return deleted
}

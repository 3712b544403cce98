package capacity

import (
	"maps"
	"slices"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// Tracker is the controller's running account of each node's allocatable
// capacity and of what holds it. It is fed by informer events and never
// scans all pods:
//   - unmanaged pods (no group label) hold capacity on their node while they
//     are bound and not terminal; they are kept as trimmed pods (holderPod),
//     not as the objects the API sends (see PodStore);
//   - Muster's own pods hold capacity once bound, and before that while they
//     are released and pinned to a node (a reservation), or gated with a
//     placement recorded in their group's status or just decided (assumed);
//   - with fast release (KEP-6143), a pod being deleted holds nothing.
//
// Reservations are derived from the pods and the PodGroups themselves, so a
// new leader rebuilds exactly the same account from a LIST.
//
// Each node's holdings are kept as kube-scheduler's own NodeInfo, which its
// filters read. A NodeInfo that a Snapshot shares is copied before it is
// changed, so a snapshot is taken in O(nodes) and never sees a later event.
type Tracker struct {
	fastRelease bool

	mu    sync.RWMutex
	nodes map[string]*Node
	// order is the node names, sorted, so that a snapshot needs no sort.
	order []string
	// index maps a node name to its place in order; a snapshot shares it,
	// so it is replaced, never changed, when the set of nodes changes.
	index map[string]int
	// anti are the label keys of every required anti-affinity term of the
	// pods held, and of pods held before: a set that only grows
	// (antiaffinity.go).
	anti antiKeys
	// levels are the topology levels' domains (topology.go), found for
	// the nodes as they are; replaced, never changed, when a node is
	// added or removed, or changes its labels, readiness or deletion.
	levels *levelCache
	// infos are the NodeInfos by node name, also of nodes not yet known
	// that pods are bound to; shared marks those a Snapshot may hold.
	infos  map[string]*schedfw.NodeInfo
	shared map[string]bool
	// unmanaged holds one compact entry per bound pod without the group label.
	unmanaged map[types.UID]holding
	// managed holds Muster's pods, with the node each one holds, if any.
	managed map[types.UID]*managedPod
	// unbound are the managed pods that hold a node they are not bound to
	// and have volumes or devices that Reserve decides (Snapshot.use).
	unbound map[types.UID]*managedPod
	byGroup map[scheduling.GroupKey]map[types.UID]struct{}
	// placements are recorded in PodGroup status; assumed are decided by an
	// admission cycle and not yet seen there. Both map pod UID to node.
	placements map[scheduling.GroupKey]map[types.UID]string
	assumed    map[scheduling.GroupKey]map[types.UID]string
	// reserved are the slots for pods not yet created that PodGroup status
	// records; assumedSlots are decided by a cycle and not yet seen there
	// (reserve.go).
	reserved     map[scheduling.GroupKey][]Slot
	assumedSlots map[scheduling.GroupKey][]Slot
	// groups are what preemption needs of each group (victims.go).
	groups map[scheduling.GroupKey]GroupState
	// drainingOn maps each pod that fast release frees while it is still
	// bound and being deleted to its node; draining counts them per node
	// (draining.go).
	drainingOn map[types.UID]string
	draining   map[string]int
	// deleting are the unmanaged pods among those, by UID: preemption
	// waits for those that a recorded preemption chose (victims.go).
	deleting map[types.UID]deletingPod
	// requestOf maps each bound capacity-request pod among the unmanaged
	// ones to its group's key; requests are those pods by group
	// (requests.go).
	requestOf map[types.UID]scheduling.GroupKey
	requests  map[scheduling.GroupKey]map[types.UID]struct{}
	// changes are what may have made room since the last admission cycle
	// (changes.go).
	changes Changes
}

// holding is one pod that holds a node.
type holding struct {
	node string
	info fwk.PodInfo
}

type managedPod struct {
	group  scheduling.GroupKey
	info   fwk.PodInfo
	active bool
	// replay says that the pod has volumes or devices that Reserve decides:
	// until it is bound, each cycle reserves them again (Snapshot.replay).
	replay bool
	gated  bool
	node   string // spec.nodeName
	pinned string // the node a released pod is pinned to
	holds  string // the node this pod's requests count on, or ""
	// rv is the resourceVersion of the state recorded, 0 if unknown.
	rv uint64
}

// NewTracker returns an empty tracker. fastRelease makes pods with a
// deletionTimestamp hold nothing (KEP-6143).
func NewTracker(fastRelease bool) *Tracker {
	return &Tracker{
		fastRelease:  fastRelease,
		nodes:        map[string]*Node{},
		infos:        map[string]*schedfw.NodeInfo{},
		shared:       map[string]bool{},
		unmanaged:    map[types.UID]holding{},
		managed:      map[types.UID]*managedPod{},
		unbound:      map[types.UID]*managedPod{},
		byGroup:      map[scheduling.GroupKey]map[types.UID]struct{}{},
		placements:   map[scheduling.GroupKey]map[types.UID]string{},
		assumed:      map[scheduling.GroupKey]map[types.UID]string{},
		reserved:     map[scheduling.GroupKey][]Slot{},
		assumedSlots: map[scheduling.GroupKey][]Slot{},
		groups:       map[scheduling.GroupKey]GroupState{},
		drainingOn:   map[types.UID]string{},
		draining:     map[string]int{},
		deleting:     map[types.UID]deletingPod{},
		requestOf:    map[types.UID]scheduling.GroupKey{},
		requests:     map[scheduling.GroupKey]map[types.UID]struct{}{},
		changes:      noChanges(),
	}
}

// SetNode adds or replaces a node.
func (t *Tracker) SetNode(n *corev1.Node) {
	node := NewNode(n)
	t.mu.Lock()
	defer t.mu.Unlock()
	old, known := t.nodes[n.Name]
	if !known {
		i, _ := slices.BinarySearch(t.order, n.Name)
		t.order = slices.Insert(t.order, i, n.Name)
		t.index = nil
	}
	if !known || old.Ready != node.Ready || !maps.Equal(old.Object.Labels, n.Labels) ||
		(old.Object.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) {
		t.levels = nil
	}
	t.nodes[n.Name] = node
	t.writable(n.Name).SetNode(node.Object)
	// Added, or changed where the filters read it (its allocatable,
	// labels, taints, conditions): a pod may fit there now. A status
	// update that renews the heartbeat is not such a change.
	if !known || len(schedfw.NodeSchedulingPropertiesChange(node.Object, old.Object)) > 0 {
		t.freedOn(n.Name, nil)
		t.changes.Nodes = true
	}
}

// RemoveNode forgets a node. Pods still bound to it keep their holdings
// until they are gone, which changes nothing since the node is not offered.
func (t *Tracker) RemoveNode(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, known := t.nodes[name]; known {
		if i, found := slices.BinarySearch(t.order, name); found {
			t.order = slices.Delete(t.order, i, i+1)
			t.index = nil
			t.levels = nil
		}
		t.changes.Nodes = true
	}
	delete(t.nodes, name)
}

// holds reports whether a pod that is not Muster's holds capacity: bound,
// not terminal and, with fast release, not being deleted.
func (t *Tracker) holdsCapacity(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && scheduling.IsActive(p, t.fastRelease)
}

// SetUnmanagedPod records a pod without the group label.
func (t *Tracker) SetUnmanagedPod(p *corev1.Pod) {
	var h holding
	keep := t.holdsCapacity(p)
	if keep {
		h = holding{node: p.Spec.NodeName, info: holderInfo(p)}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old, had := t.unmanaged[p.UID]
	if had {
		t.unhold(old.node, old.info)
		delete(t.unmanaged, p.UID)
	}
	var key scheduling.GroupKey
	if keep {
		h.node = t.intern(h.node)
		t.hold(h.node, h.info)
		t.unmanaged[p.UID] = h
		key, _ = requestKey(p)
	}
	if had && (!keep || !sameHolding(old.node, old.info, h.node, h.info)) {
		t.freedOn(old.node, old.info)
	}
	t.setRequest(p.UID, key)
	drains := t.drainingNode(p)
	t.setDraining(p.UID, drains)
	t.setDeleting(p, drains != "")
}

// RemoveUnmanagedPod forgets a pod without the group label.
func (t *Tracker) RemoveUnmanagedPod(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.unmanaged[uid]; ok {
		t.release(old.node, old.info)
		delete(t.unmanaged, uid)
	}
	t.setRequest(uid, scheduling.GroupKey{})
	t.setDraining(uid, "")
	delete(t.deleting, uid)
}

// ReplaceUnmanagedPods replaces every unmanaged holding with those of pods,
// as a relist does.
func (t *Tracker) ReplaceUnmanagedPods(pods []*corev1.Pod) {
	fresh := make(map[types.UID]holding, len(pods))
	drains := map[types.UID]string{}
	requests := map[types.UID]scheduling.GroupKey{}
	deleting := map[types.UID]deletingPod{}
	for _, p := range pods {
		if t.holdsCapacity(p) {
			fresh[p.UID] = holding{node: p.Spec.NodeName, info: holderInfo(p)}
			if key, ok := requestKey(p); ok {
				requests[p.UID] = key
			}
		}
		if node := t.drainingNode(p); node != "" {
			drains[p.UID] = node
			deleting[p.UID] = deletingOf(p)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.deleting = deleting
	for uid := range t.drainingOn {
		if _, managed := t.managed[uid]; !managed {
			t.setDraining(uid, "")
		}
	}
	for uid, node := range drains {
		t.setDraining(uid, node)
	}
	for _, old := range t.unmanaged {
		t.release(old.node, old.info)
	}
	for uid, h := range fresh {
		h.node = t.intern(h.node)
		t.hold(h.node, h.info)
		fresh[uid] = h
	}
	t.unmanaged = fresh
	t.requestOf = map[types.UID]scheduling.GroupKey{}
	t.requests = map[scheduling.GroupKey]map[types.UID]struct{}{}
	for uid, key := range requests {
		t.setRequest(uid, key)
	}
}

// UnmanagedPods is how many unmanaged pods hold capacity.
func (t *Tracker) UnmanagedPods() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.unmanaged)
}

// SetManagedPod records one of Muster's pods, of group key. A pod whose
// group label changed is moved.
//
// The controller also records what its own pod patches return, before the
// informer shows it (a released pod holds its node from then on); an older
// state the informer delivers after that is ignored.
func (t *Tracker) SetManagedPod(key scheduling.GroupKey, p *corev1.Pod, gated bool) {
	rv := resourceVersion(p)
	pp := PlacementPod(p)
	mp := &managedPod{
		group:  key,
		info:   newPodInfo(pp),
		replay: len(pp.Spec.ResourceClaims) > 0 || len(pp.Spec.Volumes) > 0,
		active: scheduling.IsActive(p, t.fastRelease),
		gated:  gated,
		node:   p.Spec.NodeName,
		pinned: scheduling.PinnedNode(p),
		rv:     rv,
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old, had := t.managed[p.UID]
	if had {
		if rv != 0 && old.rv > rv {
			return // a newer state was recorded meanwhile
		}
		// An update: the holding moves with the new state below.
		if old.holds != "" {
			t.unhold(old.holds, old.info)
		}
		if old.group != key {
			t.leaveGroup(old.group, p.UID)
		}
	}
	t.managed[p.UID] = mp
	set := t.byGroup[key]
	if set == nil {
		set = map[types.UID]struct{}{}
		t.byGroup[key] = set
	}
	set[p.UID] = struct{}{}
	t.rehold(p.UID, mp)
	if had && old.holds != "" && !sameHolding(old.holds, old.info, mp.holds, mp.info) {
		t.freedOn(old.holds, old.info)
	}
	t.setDraining(p.UID, t.drainingNode(p))
}

// Observed reports whether the tracker has recorded every one of pods
// (observed.go in capacityadmission says why a cycle asks).
func (t *Tracker) Observed(pods []*corev1.Pod) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, p := range pods {
		if _, ok := t.managed[p.UID]; !ok {
			return false
		}
	}
	return true
}

// RemoveManagedPod forgets one of Muster's pods.
func (t *Tracker) RemoveManagedPod(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.dropManaged(uid)
}

func (t *Tracker) dropManaged(uid types.UID) {
	old, ok := t.managed[uid]
	if !ok {
		return
	}
	t.setDraining(uid, "")
	if old.holds != "" {
		t.release(old.holds, old.info)
	}
	delete(t.managed, uid)
	delete(t.unbound, uid)
	t.leaveGroup(old.group, uid)
}

// leaveGroup removes a pod from its group's set and from what was assumed for it.
func (t *Tracker) leaveGroup(key scheduling.GroupKey, uid types.UID) {
	if set := t.byGroup[key]; set != nil {
		delete(set, uid)
		if len(set) == 0 {
			delete(t.byGroup, key)
		}
	}
	if a := t.assumed[key]; a != nil {
		delete(a, uid)
		if len(a) == 0 {
			delete(t.assumed, key)
		}
	}
}

// rehold moves a managed pod's holding to the node its state says.
func (t *Tracker) rehold(uid types.UID, mp *managedPod) {
	defer t.trackUnbound(uid, mp)
	want := ""
	switch {
	case !mp.active:
	case mp.node != "":
		want = mp.node
	case !mp.gated:
		want = mp.pinned
	default:
		if n, ok := t.assumed[mp.group][uid]; ok {
			want = n
		} else {
			want = t.placements[mp.group][uid]
		}
	}
	if want == mp.holds {
		return
	}
	if mp.holds != "" {
		t.release(mp.holds, mp.info)
	}
	if want != "" {
		want = t.intern(want)
		t.hold(want, mp.info)
	}
	mp.holds = want
}

// trackUnbound keeps t.unbound in step with a managed pod's holding.
func (t *Tracker) trackUnbound(uid types.UID, mp *managedPod) {
	if mp.replay && mp.holds != "" && mp.node == "" {
		t.unbound[uid] = mp
	} else {
		delete(t.unbound, uid)
	}
}

// SetPlacements records the placements a PodGroup's status holds, by pod UID.
func (t *Tracker) SetPlacements(key scheduling.GroupKey, byUID map[types.UID]string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(byUID) == 0 {
		delete(t.placements, key)
	} else {
		t.placements[key] = byUID
	}
	// A placement the status now shows is no longer only assumed.
	if a := t.assumed[key]; a != nil {
		for uid, node := range byUID {
			if a[uid] == node {
				delete(a, uid)
			}
		}
		if len(a) == 0 {
			delete(t.assumed, key)
		}
	}
	t.reholdGroup(key)
}

// Assume reserves the placements an admission cycle just decided for group
// key, until the group's status shows them or Forget is called, so that the
// next cycle never offers the same capacity again.
func (t *Tracker) Assume(key scheduling.GroupKey, byUID map[types.UID]string) {
	if len(byUID) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.assumed[key]
	if a == nil {
		a = map[types.UID]string{}
		t.assumed[key] = a
	}
	for uid, node := range byUID {
		a[uid] = node
	}
	t.reholdGroup(key)
}

// Forget drops what was assumed for group key: the decision was not carried out.
func (t *Tracker) Forget(key scheduling.GroupKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgetSlots(key, false)
	if _, ok := t.assumed[key]; !ok {
		return
	}
	delete(t.assumed, key)
	t.reholdGroup(key)
}

// ForgetGroup drops everything known of a deleted group's placements.
func (t *Tracker) ForgetGroup(key scheduling.GroupKey) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.assumed, key)
	delete(t.placements, key)
	t.forgetSlots(key, true)
	t.reholdGroup(key)
}

func (t *Tracker) reholdGroup(key scheduling.GroupKey) {
	for uid := range t.byGroup[key] {
		t.rehold(uid, t.managed[uid])
	}
}

func (t *Tracker) hold(node string, info fwk.PodInfo) {
	t.writable(node).AddPodInfo(info)
	t.heldBy(podPriority(info.GetPod()))
	if len(info.GetRequiredAntiAffinityTerms()) > 0 {
		t.anti.add(info)
	}
}

// release gives back what a pod held on node, and records the room freed
// (changes.go).
func (t *Tracker) release(node string, info fwk.PodInfo) {
	t.unhold(node, info)
	t.freedOn(node, info)
}

// unhold takes a pod off node, for an update that holds it again: the
// caller records the room freed, if the new state frees any.
func (t *Tracker) unhold(node string, info fwk.PodInfo) {
	ni := t.writable(node)
	if err := ni.RemovePod(klog.Background(), info.GetPod()); err != nil {
		klog.Background().Error(err, "Capacity tracker released a pod it did not hold", "node", node, "pod", klog.KObj(info.GetPod()))
	}
}

// writable returns a node's NodeInfo for the tracker to change: a copy of
// the one a Snapshot may hold.
func (t *Tracker) writable(node string) *schedfw.NodeInfo {
	ni := t.infos[node]
	switch {
	case ni == nil:
		ni = schedfw.NewNodeInfo()
		t.infos[node] = ni
	case t.shared[node]:
		ni = ni.SnapshotConcrete()
		t.infos[node] = ni
		delete(t.shared, node)
	}
	return ni
}

// newPodInfo is the scheduler's view of a pod, computed once per change of
// the pod. An affinity term the scheduler cannot parse leaves the term out,
// as the scheduler's own cache does.
func newPodInfo(p *corev1.Pod) fwk.PodInfo {
	pi, _ := schedfw.NewPodInfo(p)
	return pi
}

// intern returns the tracker's own copy of a node name when it knows the
// node, so that thousands of holdings share one string.
func (t *Tracker) intern(node string) string {
	if n, ok := t.nodes[node]; ok {
		return n.Object.Name
	}
	return node
}

// Snapshot copies the tracker's view for one admission cycle on filters:
// every node, sorted by name, with the pods that hold it.
func (t *Tracker) Snapshot(filters *Filters) *Snapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.snapshotLocked(filters)
}

func (t *Tracker) snapshotLocked(filters *Filters) *Snapshot {
	if t.index == nil {
		t.index = make(map[string]int, len(t.order))
		for i, name := range t.order {
			t.index[name] = i
		}
	}
	if t.levels == nil {
		t.levels = &levelCache{m: map[string][]levelDomain{}}
	}
	s := &Snapshot{
		filters: filters,
		Nodes:   make([]*Node, len(t.order)),
		infos:   make([]*schedfw.NodeInfo, len(t.order)),
		index:   t.index,
		levels:  t.levels,
		anti:    t.anti.clone(),
	}
	s.draining = t.drainingNodes()
	for i, name := range t.order {
		s.Nodes[i] = t.nodes[name]
		s.infos[i] = t.infos[name]
		t.shared[name] = true
	}
	for _, mp := range t.unbound {
		s.unbound = append(s.unbound, holder{pod: mp.info.GetPod(), node: mp.holds})
	}
	return s
}

// resourceVersion is the pod's resourceVersion as a number, or 0. Muster
// compares the versions of one pod only, to keep the newer of the state its
// own patch returned and the state its informer delivers; kube-apiserver's
// etcd3 storage gives them in increasing order.
func resourceVersion(p *corev1.Pod) uint64 {
	rv, err := strconv.ParseUint(p.ResourceVersion, 10, 64)
	if err != nil {
		return 0
	}
	return rv
}

package capacity

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/labels"
	fwk "k8s.io/kube-scheduler/framework"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"
)

// Snapshot is a copy of the tracker's view that one admission cycle places
// gangs on: every node with the pods that hold it, as the scheduler's own
// NodeInfos. Placing a gang changes only the snapshot.
//
// The NodeInfos are shared with the tracker and copied on write, so taking a
// snapshot costs one pointer per node; placement copies a node only when it
// puts a pod on it.
type Snapshot struct {
	filters *Filters
	// Nodes are sorted by name; infos[i] is Nodes[i]'s NodeInfo.
	Nodes []*Node
	infos []*schedfw.NodeInfo
	index map[string]int

	// unbound are Muster's pods that hold a node without being bound to it
	// yet; their volumes and devices are reserved before the first placement
	// (replay.go).
	unbound  []holder
	replayed bool
	// draining are the nodes, by index, where pods being deleted still
	// hold room in kube-scheduler's view; ignoreDraining turns off the rule
	// that guards them (draining.go).
	draining       map[int]bool
	ignoreDraining bool
	// evicted are the pods of victims taken off each node by evict, which
	// kube-scheduler counts there until they are deleted.
	evicted map[int][]*corev1.Pod
	// overlay holds the nodes that the placement in progress changed.
	overlay map[int]*schedfw.NodeInfo
	// reserved are the Reserve calls of committed placements and replays,
	// undone by Close.
	reserved []reservation
	// lists caches the lister's node lists (all, and with pods that have
	// affinity, required anti-affinity, and non-hostname anti-affinity)
	// until a node changes; PreFilter asks for them once per pod.
	// levels are the domains of each topology level placement asked for
	// (topology.go), found once per snapshot.
	levels *levelCache
	// anti are the label keys of required anti-affinity terms of the
	// pods on it (antiAffinityKeys).
	anti antiKeys
	// free caches each node's free resources for topology.go's room.
	free       []nodeFree
	listsMu    sync.Mutex
	lists      [4][]fwk.NodeInfo
	listsValid [4]bool
	// listNodes are the node indexes of lists 1 to 3, in order (list 0
	// holds every node, node i at i); dirty are the nodes changed since,
	// of which list k has brought in listsSeen[k] (nodelists.go).
	listNodes [4][]int
	dirty     []int
	listsSeen [4]int
}

// holder is one of Muster's pods holding a node it is not bound to.
type holder struct {
	pod  *corev1.Pod
	node string
}

// NodeCount is how many nodes the snapshot has.
func (s *Snapshot) NodeCount() int { return len(s.Nodes) }

// Empty returns the same nodes with no pod on them: the cluster idle. A gang
// that does not fit on it can never fit as the cluster stands.
func (s *Snapshot) Empty() *Snapshot {
	e := &Snapshot{filters: s.filters, Nodes: s.Nodes, index: s.index, levels: s.levels, infos: make([]*schedfw.NodeInfo, len(s.infos)), replayed: true}
	for i, n := range s.Nodes {
		ni := schedfw.NewNodeInfo()
		ni.SetNode(n.Object)
		e.infos[i] = ni
	}
	return e
}

// idlesDevices reports whether idleDevicesFor frees every device: the
// filters place devices (DRA) through Muster's tracker of them.
func (s *Snapshot) idlesDevices() bool {
	return s.filters != nil && s.filters.devices != nil
}

// idleDevicesFor runs judge, on an idle snapshot (Empty, EmptyKeeping),
// with every device free but those its own placements pick: the devices
// of the idle cluster, which Empty alone cannot free since the DRA
// manager, not the nodes, holds them.
func (s *Snapshot) idleDevicesFor(judge func()) {
	if !s.idlesDevices() {
		judge()
		return
	}
	s.filters.devices.claims.idleFor(judge)
}

// EmptyKeeping is Empty with the pods keep selects left on their nodes:
// the cluster idle but for them.
func (s *Snapshot) EmptyKeeping(keep func(*corev1.Pod) bool) *Snapshot {
	e := s.Empty()
	for i := range s.infos {
		for _, pi := range s.info(i).GetPods() {
			if keep(pi.GetPod()) {
				e.infos[i].AddPodInfo(pi)
				e.anti.add(pi)
			}
		}
	}
	return e
}

// namespaceLabels is a namespace's labels as the filters' informer has
// them, which InterPodAffinity matches namespaceSelectors against; false
// when the namespace is not known, or there are no filters.
func (s *Snapshot) namespaceLabels(name string) (labels.Set, bool) {
	if s.filters == nil || s.filters.namespaces == nil {
		return nil, false
	}
	ns, err := s.filters.namespaces.Get(name)
	if err != nil {
		return nil, false
	}
	return labels.Set(ns.Labels), true
}

// info is node i as the placement in progress sees it.
func (s *Snapshot) info(i int) *schedfw.NodeInfo {
	if ni, ok := s.overlay[i]; ok {
		return ni
	}
	return s.infos[i]
}

// writable returns node i's NodeInfo for the placement in progress to
// change, copying the shared one first.
func (s *Snapshot) writable(i int) *schedfw.NodeInfo {
	if ni, ok := s.overlay[i]; ok {
		return ni
	}
	if s.overlay == nil {
		s.overlay = map[int]*schedfw.NodeInfo{}
	}
	ni := s.infos[i].SnapshotConcrete()
	s.overlay[i] = ni
	s.changedNode(i)
	return ni
}

// sharedLister is what the framework's plugins read the snapshot through.
// The Filters' lister points at the snapshot of the cycle in progress.
type sharedLister struct {
	s *Snapshot
}

var _ fwk.SharedLister = &sharedLister{}

func (l *sharedLister) NodeInfos() fwk.NodeInfoLister           { return nodeInfoLister{l} }
func (l *sharedLister) StorageInfos() fwk.StorageInfoLister     { return storageInfoLister{l} }
func (l *sharedLister) PodGroupStates() fwk.PodGroupStateLister { return noPodGroupStates{} }
func (l *sharedLister) PodGroups() fwk.PodGroupLister           { return noPodGroups{} }
func (l *sharedLister) CompositePodGroupStates() fwk.CompositePodGroupStateLister {
	return noCompositePodGroupStates{}
}
func (l *sharedLister) CompositePodGroups() fwk.CompositePodGroupLister {
	return noCompositePodGroups{}
}

type nodeInfoLister struct{ l *sharedLister }

func (n nodeInfoLister) snapshot() (*Snapshot, error) {
	if n.l.s == nil {
		return nil, fmt.Errorf("no snapshot is being placed on")
	}
	return n.l.s, nil
}

func (n nodeInfoLister) List() ([]fwk.NodeInfo, error) { return n.list(0) }

func (n nodeInfoLister) HavePodsWithAffinityList() ([]fwk.NodeInfo, error) { return n.list(1) }

func (n nodeInfoLister) HavePodsWithRequiredAntiAffinityList() ([]fwk.NodeInfo, error) {
	return n.list(2)
}

func (n nodeInfoLister) HavePodsWithRequiredNonHostScopedAntiAffinityList() ([]fwk.NodeInfo, error) {
	return n.list(3)
}

func (n nodeInfoLister) Get(name string) (fwk.NodeInfo, error) {
	s, err := n.snapshot()
	if err != nil {
		return nil, err
	}
	i, ok := s.index[name]
	if !ok {
		return nil, fmt.Errorf("nodeinfo not found for node name %q", name)
	}
	return s.info(i), nil
}

type storageInfoLister struct{ l *sharedLister }

// IsPVCUsedByPods reports whether a pod on any node uses the claim
// (namespace/name), which VolumeRestrictions asks of ReadWriteOncePod claims.
func (st storageInfoLister) IsPVCUsedByPods(key string) bool {
	s := st.l.s
	if s == nil {
		return false
	}
	for i := range s.infos {
		if s.info(i).PVCRefCounts[key] > 0 {
			return true
		}
	}
	return false
}

// The scheduler's own workload API (its PodGroups) is not modelled: Muster's
// pods do not use it, and their gang is Muster's.
type (
	noPodGroups               struct{}
	noPodGroupStates          struct{}
	noCompositePodGroups      struct{}
	noCompositePodGroupStates struct{}
)

func notModelled(kind, namespace, name string) error {
	return fmt.Errorf("%s %s/%s: the scheduler's pod groups are not modelled", kind, namespace, name)
}

func (noPodGroups) Get(namespace, name string) (*schedulingv1beta1.PodGroup, error) {
	return nil, notModelled("PodGroup", namespace, name)
}

func (noPodGroupStates) Get(namespace, name string) (fwk.PodGroupState, error) {
	return nil, notModelled("PodGroup", namespace, name)
}

func (noCompositePodGroups) Get(namespace, name string) (*schedulingv1alpha3.CompositePodGroup, error) {
	return nil, notModelled("CompositePodGroup", namespace, name)
}

func (noCompositePodGroupStates) Get(namespace, name string) (fwk.CompositePodGroupState, error) {
	return nil, notModelled("CompositePodGroup", namespace, name)
}

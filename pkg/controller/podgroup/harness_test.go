package podgroup

import (
	"context"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kubeinformers "k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	k8smetrics "k8s.io/component-base/metrics"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/capacity"
	"github.com/muster-dev/muster/pkg/controller/capacityadmission"
	musterfake "github.com/muster-dev/muster/pkg/generated/clientset/versioned/fake"
	musterinformers "github.com/muster-dev/muster/pkg/generated/informers/externalversions"
)

// harness runs a Controller over fake clientsets. Its informers are never
// started: observe copies what the fake API holds into their indexers and
// calls the controller's handlers, as a running informer would. A test that
// wants a stale cache simply does not call observe.
type harness struct {
	t        *testing.T
	c        *Controller
	kube     *kubefake.Clientset
	muster   *musterfake.Clientset
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	pods     cache.Indexer
	groups   cache.Indexer
	ns       cache.Indexer
	jobs     cache.Indexer
	sets     cache.Indexer

	mu sync.Mutex
	// calls is every API call of both clients, in order.
	calls  []string
	nextRV func() string
	healed atomic.Bool
}

// newHarness builds a controller over objs (pods, PodGroups and namespaces;
// the namespace testNS is added) with DefaultConfig changed by cfg.
func newHarness(t *testing.T, cfg func(*Config), objs ...runtime.Object) *harness {
	t.Helper()
	var kubeObjs, musterObjs []runtime.Object
	kubeObjs = append(kubeObjs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Name: testNS, Labels: map[string]string{corev1.LabelMetadataName: testNS},
	}})
	for _, o := range objs {
		switch o.(type) {
		case *v1alpha1.PodGroup, *v1alpha1.Workload:
			musterObjs = append(musterObjs, o.DeepCopyObject())
		default:
			kubeObjs = append(kubeObjs, o.DeepCopyObject())
		}
	}
	// The simple trackers apply JSON patches, test operations included, and
	// are fast enough for groups of 1,000 pods; the field-managed ones are not.
	h := &harness{
		t:        t,
		kube:     kubefake.NewSimpleClientset(withVersions(kubeObjs)...),
		muster:   musterfake.NewSimpleClientset(withVersions(musterObjs)...),
		clock:    clocktesting.NewFakeClock(t0),
		recorder: record.NewFakeRecorder(10000),
	}
	h.nextRV = keepVersions(&h.kube.Fake, h.kube.Tracker())
	keepVersions(&h.muster.Fake, h.muster.Tracker())
	h.kube.PrependReactor("*", "*", h.logCall)
	h.muster.PrependReactor("*", "*", h.logCall)

	// The pods the controller sees are trimmed as in production.
	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(h.kube, 0, kubeinformers.WithTransform(TransformPod))
	musterFactory := musterinformers.NewSharedInformerFactory(h.muster, 0)
	podInformer := kubeFactory.Core().V1().Pods()
	nsInformer := kubeFactory.Core().V1().Namespaces()
	pgInformer := musterFactory.Scheduling().V1alpha1().PodGroups()

	c := DefaultConfig()
	// Tests of the rules every mode shares run with count admission, which
	// releases a complete gang at once; capacity tests say so, and add nodes.
	c.Admission = AdmissionCount
	if cfg != nil {
		cfg(&c)
	}
	var nodeInformer coreinformers.NodeInformer
	if c.Admission == AdmissionCapacity {
		nodeInformer = kubeFactory.Core().V1().Nodes()
	}
	ownerFactory := kubeinformers.NewSharedInformerFactoryWithOptions(h.kube, 0, kubeinformers.WithTransform(TransformOwner))
	jobInformer := ownerFactory.Batch().V1().Jobs()
	stsInformer := ownerFactory.Apps().V1().StatefulSets()
	ctrl, err := New(c, h.kube, h.muster, Informers{
		Pods: podInformer, Namespaces: nsInformer, PodGroups: pgInformer, Nodes: nodeInformer,
		Jobs: jobInformer, StatefulSets: stsInformer,
	}, h.recorder)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctrl.clock = h.clock
	// Its metrics count in a registry of its own, as they would while it
	// leads, and no two tests' controllers collide in the process's.
	ctrl.registry = k8smetrics.NewKubeRegistry()
	if err := ctrl.metrics.register(ctrl.registry); err != nil {
		t.Fatalf("registering metrics: %v", err)
	}
	if a, ok := ctrl.admitter.(*capacityadmission.Mode); ok {
		a.UseClock(h.clock)
		a.UseFilters(testFilters(t))
	}
	t.Cleanup(ctrl.queue.ShutDown)
	h.c = ctrl
	h.pods = podInformer.Informer().GetIndexer()
	h.groups = pgInformer.Informer().GetIndexer()
	h.ns = nsInformer.Informer().GetIndexer()
	h.jobs = jobInformer.Informer().GetIndexer()
	h.sets = stsInformer.Informer().GetIndexer()
	h.observe()
	h.reset()
	return h
}

func (h *harness) logCall(a k8stesting.Action) (bool, runtime.Object, error) {
	var name string
	switch a := a.(type) {
	case k8stesting.GetAction:
		name = a.GetName()
	case k8stesting.PatchAction:
		name = a.GetName()
	case k8stesting.DeleteAction:
		name = a.GetName()
	case k8stesting.CreateAction:
		if m, err := meta.Accessor(a.GetObject()); err == nil {
			name = m.GetName()
		}
	case k8stesting.UpdateAction:
		if m, err := meta.Accessor(a.GetObject()); err == nil {
			name = m.GetName()
		}
	}
	res := a.GetResource().Resource
	if a.GetSubresource() != "" {
		res += "/" + a.GetSubresource()
	}
	h.mu.Lock()
	h.calls = append(h.calls, a.GetVerb()+" "+res+" "+name)
	h.mu.Unlock()
	return false, nil, nil
}

// reset forgets the calls, actions and events seen so far.
func (h *harness) reset() {
	h.mu.Lock()
	h.calls = nil
	h.mu.Unlock()
	h.kube.ClearActions()
	h.muster.ClearActions()
	h.events()
}

// sync runs one sync of testGroup and fails the test on an error.
func (h *harness) sync() time.Duration {
	h.t.Helper()
	d, err := h.c.sync(h.t.Context(), testKey)
	if err != nil {
		h.t.Fatalf("sync: %v", err)
	}
	return d
}

// observe brings the informer caches up to date with the fake API and calls
// the controller's pod handlers for what changed.
func (h *harness) observe() {
	h.t.Helper()
	h.observeNodes()
	h.observePods()
	h.observeGroups()
	h.observeOwners()
	nsList, err := h.kube.Tracker().List(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"},
		schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, "")
	if err != nil {
		h.t.Fatalf("listing namespaces: %v", err)
	}
	var items []any
	for i := range nsList.(*corev1.NamespaceList).Items {
		items = append(items, &nsList.(*corev1.NamespaceList).Items[i])
	}
	if err := h.ns.Replace(items, ""); err != nil {
		h.t.Fatalf("caching namespaces: %v", err)
	}
}

func (h *harness) observePods() {
	h.t.Helper()
	list, err := h.kube.Tracker().List(podsGVR, podGVK, "")
	if err != nil {
		h.t.Fatalf("listing pods: %v", err)
	}
	seen := map[string]bool{}
	for i := range list.(*corev1.PodList).Items {
		// The cache holds what the informer's transform keeps, as in production.
		o, err := TransformPod(list.(*corev1.PodList).Items[i].DeepCopy())
		if err != nil {
			h.t.Fatalf("transforming pod: %v", err)
		}
		p := o.(*corev1.Pod)
		key, _ := cache.MetaNamespaceKeyFunc(p)
		seen[key] = true
		old, exists, _ := h.pods.GetByKey(key)
		if exists && old.(*corev1.Pod).ResourceVersion == p.ResourceVersion {
			continue
		}
		if err := h.pods.Update(p); err != nil {
			h.t.Fatalf("caching pod: %v", err)
		}
		if exists {
			h.c.updatePod(old, p)
		} else {
			h.c.addPod(p)
		}
	}
	for _, key := range h.pods.ListKeys() {
		if seen[key] {
			continue
		}
		old, _, _ := h.pods.GetByKey(key)
		if err := h.pods.Delete(old); err != nil {
			h.t.Fatalf("uncaching pod: %v", err)
		}
		h.c.deletePod(old)
	}
}

// admission is the controller's capacity-aware admission; the test must
// have asked for AdmissionCapacity.
func (h *harness) admission() *capacityadmission.Mode {
	h.t.Helper()
	a, ok := h.c.admitter.(*capacityadmission.Mode)
	if !ok {
		h.t.Fatalf("the controller runs %T, not capacity-aware admission", h.c.admitter)
	}
	return a
}

// observeNodes hands every node to the capacity tracker.
func (h *harness) observeNodes() {
	h.t.Helper()
	a, ok := h.c.admitter.(*capacityadmission.Mode)
	if !ok {
		return
	}
	list, err := h.kube.Tracker().List(schema.GroupVersionResource{Version: "v1", Resource: "nodes"},
		schema.GroupVersionKind{Version: "v1", Kind: "Node"}, "")
	if err != nil {
		h.t.Fatalf("listing nodes: %v", err)
	}
	for i := range list.(*corev1.NodeList).Items {
		a.SetNode(&list.(*corev1.NodeList).Items[i])
	}
}

func (h *harness) observeGroups() {
	h.t.Helper()
	list, err := h.muster.Tracker().List(podGroupsGVR, podGroupGVK, "")
	if err != nil {
		h.t.Fatalf("listing podgroups: %v", err)
	}
	var items []any
	for i := range list.(*v1alpha1.PodGroupList).Items {
		items = append(items, &list.(*v1alpha1.PodGroupList).Items[i])
	}
	if err := h.groups.Replace(items, ""); err != nil {
		h.t.Fatalf("caching podgroups: %v", err)
	}
	if _, ok := h.c.admitter.(*capacityadmission.Mode); ok {
		for _, o := range items {
			h.c.addPodGroup(o)
		}
	}
}

// step advances the clock, caches what the API holds and syncs.
func (h *harness) step(d time.Duration) time.Duration {
	h.t.Helper()
	h.clock.Step(d)
	h.observe()
	h.reset()
	return h.sync()
}

// setPod replaces a pod in the fake API, as the kubelet or a user would.
func (h *harness) setPod(p *corev1.Pod) {
	h.t.Helper()
	p.ResourceVersion = h.nextRV()
	if err := h.kube.Tracker().Update(podsGVR, p, p.Namespace); err != nil {
		h.t.Fatalf("updating pod %s: %v", p.Name, err)
	}
}

// addPod creates a pod in the fake API.
func (h *harness) addPod(p *corev1.Pod) {
	h.t.Helper()
	p.ResourceVersion = h.nextRV()
	if err := h.kube.Tracker().Add(p); err != nil {
		h.t.Fatalf("adding pod %s: %v", p.Name, err)
	}
}

// recreateGroup replaces testGroup in the fake API by a new one, as after
// the old one was deleted and a user created it again.
func (h *harness) recreateGroup(pg *v1alpha1.PodGroup) {
	h.t.Helper()
	if err := h.muster.Tracker().Delete(podGroupsGVR, testNS, testGroup); err != nil {
		h.t.Fatalf("deleting podgroup: %v", err)
	}
	pg.ResourceVersion = h.nextRV()
	if err := h.muster.Tracker().Add(pg); err != nil {
		h.t.Fatalf("adding podgroup: %v", err)
	}
}

func (h *harness) deletePod(name string) {
	h.t.Helper()
	if err := h.kube.Tracker().Delete(podsGVR, testNS, name); err != nil {
		h.t.Fatalf("deleting pod %s: %v", name, err)
	}
}

// pod reads a pod from the fake API.
func (h *harness) pod(name string) *corev1.Pod {
	h.t.Helper()
	o, err := h.kube.Tracker().Get(podsGVR, testNS, name)
	if err != nil {
		h.t.Fatalf("getting pod %s: %v", name, err)
	}
	return o.(*corev1.Pod)
}

// group reads testGroup from the fake API.
func (h *harness) group() *v1alpha1.PodGroup {
	h.t.Helper()
	o, err := h.muster.Tracker().Get(podGroupsGVR, testNS, testGroup)
	if err != nil {
		h.t.Fatalf("getting podgroup: %v", err)
	}
	return o.(*v1alpha1.PodGroup)
}

// callLog returns the API calls of both clients in order.
func (h *harness) callLog() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

// podPatches returns the pod patches sent, by pod name.
func (h *harness) podPatches() map[string][]string {
	out := map[string][]string{}
	for _, a := range h.kube.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && a.GetResource().Resource == "pods" {
			if p.GetPatchType() != types.JSONPatchType {
				h.t.Errorf("pod %s patched with %s, want a JSON patch", p.GetName(), p.GetPatchType())
			}
			out[p.GetName()] = append(out[p.GetName()], string(p.GetPatch()))
		}
	}
	return out
}

// statusWrites returns the PodGroup status updates sent, in order.
func (h *harness) statusWrites() []*v1alpha1.PodGroup {
	var out []*v1alpha1.PodGroup
	for _, a := range h.muster.Actions() {
		if u, ok := a.(k8stesting.UpdateAction); ok && a.GetSubresource() == "status" {
			out = append(out, u.GetObject().(*v1alpha1.PodGroup))
		}
	}
	return out
}

// created returns the PodGroup the controller asked to create, or nil.
func (h *harness) created() *v1alpha1.PodGroup {
	for _, a := range h.muster.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "podgroups" {
			return c.GetObject().(*v1alpha1.PodGroup)
		}
	}
	return nil
}

// mutations returns the calls that write, i.e. everything but reads.
func (h *harness) mutations() []string {
	var out []string
	for _, c := range h.callLog() {
		if !strings.HasPrefix(c, "get ") && !strings.HasPrefix(c, "list ") && !strings.HasPrefix(c, "watch ") {
			out = append(out, c)
		}
	}
	return out
}

// events drains the events recorded so far.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// failPatches makes pod patches of the named pods fail until heal is called.
func (h *harness) failPatches(err error, names ...string) {
	h.kube.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if !h.healed.Load() && slices.Contains(names, a.(k8stesting.PatchAction).GetName()) {
			return true, nil, err
		}
		return false, nil, nil
	})
}

// heal ends every failure injected so far.
func (h *harness) heal() { h.healed.Store(true) }

// syncExpectingErr runs one sync and checks whether it failed.
func (h *harness) syncExpectingErr(wantErr bool) time.Duration {
	h.t.Helper()
	d, err := h.c.sync(h.t.Context(), testKey)
	if wantErr && err == nil {
		h.t.Fatalf("sync succeeded; want an error that sends the group back to the queue")
	}
	if !wantErr && err != nil {
		h.t.Fatalf("sync: %v", err)
	}
	return d
}

type (
	k8sAction      = k8stesting.Action
	k8sPatchAction = k8stesting.PatchAction
)

// snapshot returns the pods and PodGroups the fake API holds, to start a
// new controller from, as after a restart.
func (h *harness) snapshot() []runtime.Object {
	h.t.Helper()
	var out []runtime.Object
	pl, err := h.kube.Tracker().List(podsGVR, podGVK, "")
	if err != nil {
		h.t.Fatalf("listing pods: %v", err)
	}
	for i := range pl.(*corev1.PodList).Items {
		out = append(out, pl.(*corev1.PodList).Items[i].DeepCopy())
	}
	gl, err := h.muster.Tracker().List(podGroupsGVR, podGroupGVK, "")
	if err != nil {
		h.t.Fatalf("listing podgroups: %v", err)
	}
	for i := range gl.(*v1alpha1.PodGroupList).Items {
		out = append(out, gl.(*v1alpha1.PodGroupList).Items[i].DeepCopy())
	}
	return out
}

// sharedFilters are the scheduler's filters on a cluster with no storage or
// DRA objects, built once per package test run, on a clientset of their own
// so that their informers' calls are not counted as the controller's.
type sharedFilters struct {
	once    sync.Once
	filters *capacity.Filters
	err     error
}

var withDRA, withoutDRA sharedFilters

func (s *sharedFilters) get(t *testing.T, dra bool) *capacity.Filters {
	t.Helper()
	s.once.Do(func() {
		ctx := context.Background()
		s.filters, s.err = capacity.NewFilters(ctx, kubefake.NewClientset(), dra)
		if s.err == nil {
			s.err = s.filters.Start(ctx)
		}
	})
	if s.err != nil {
		t.Fatalf("starting the scheduler's filters: %v", s.err)
	}
	return s.filters
}

// testFilters are the filters of a cluster that serves resource.k8s.io/v1.
func testFilters(t *testing.T) *capacity.Filters { return withDRA.get(t, true) }

// filtersWithoutDRA are those of a cluster that does not (before 1.34).
func filtersWithoutDRA(t *testing.T) *capacity.Filters { return withoutDRA.get(t, false) }

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	"github.com/muster-dev/muster/test/cluster"
)

// nodePoolLabel is the label Karpenter puts on each node it launches,
// naming its NodePool.
const nodePoolLabel = "karpenter.sh/nodepool"

// autoscaledCluster starts a cluster of its own with Karpenter's kwok
// provider and Muster asking for capacity with capacity-request pods
// (the cluster serves no ProvisioningRequest), plus args; mods change its
// options. For the rest of the test the suite's clients and helpers work
// on it (useCluster).
func autoscaledCluster(t *testing.T, args []string, mods ...func(*cluster.Options)) *cluster.Cluster {
	t.Helper()
	c := clusterOfItsOwn(t, append([]func(*cluster.Options){func(o *cluster.Options) {
		o.Karpenter = true
		o.MusterArgs = slices.Concat(musterArgs, []string{"--autoscaling=pods"}, args)
	}}, mods...)...)
	useCluster(t, c)
	return c
}

// useCluster points the suite's cluster and clients at c until the test
// ends, so that every helper of the suite works on c. The e2e tests run one
// at a time (none calls t.Parallel), so nothing else uses them meanwhile.
// Cleanups registered after this one (namespaces, PriorityClasses) still
// run against c.
func useCluster(t *testing.T, c *cluster.Cluster) {
	t.Helper()
	savedEnv, savedKube, savedMuster := env, kube, muster
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = 200, 400
	env, kube, muster = c, kubernetes.NewForConfigOrDie(cfg), versioned.NewForConfigOrDie(cfg)
	t.Cleanup(func() { env, kube, muster = savedEnv, savedKube, savedMuster })
}

// karpenterPool creates a NodePool name and its KWOKNodeClass, and waits
// until it is Ready (Cluster.CreateKarpenterPool).
func karpenterPool(t *testing.T, ctx context.Context, name string, instanceTypes []string, limits corev1.ResourceList) {
	t.Helper()
	if err := env.CreateKarpenterPool(ctx, name, instanceTypes, limits); err != nil {
		t.Fatal(err)
	}
}

// nodeClaims counts Karpenter's NodeClaims.
func nodeClaims(ctx context.Context) (int, error) {
	list, err := dynamic.NewForConfigOrDie(env.Config).Resource(cluster.NodeClaimResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, err
	}
	return len(list.Items), nil
}

// poolNodeNames lists the nodes Karpenter launched for NodePool pool.
func poolNodeNames(ctx context.Context, pool string) ([]string, error) {
	list, err := kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: nodePoolLabel + "=" + pool})
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(list.Items))
	for _, n := range list.Items {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	return names, nil
}

// withGPUs makes a pod ask for n GPUs, as requests and limits, as extended
// resources require.
func withGPUs(n int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		q := *resource.NewQuantity(n, resource.DecimalSI)
		c := &p.Spec.Containers[0]
		c.Resources.Requests[cluster.GPUResource] = q
		c.Resources.Limits = corev1.ResourceList{cluster.GPUResource: q}
	}
}

// withCPU sets a pod's CPU request.
func withCPU(cpu string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
}

// createPlainGang creates a PodGroup of n and its n pods at once, pods that
// select no node: an autoscaler may serve them with any node.
func createPlainGang(t *testing.T, ctx context.Context, ns, group string, n int, mods ...func(*corev1.Pod)) {
	t.Helper()
	createGroup(t, ctx, ns, group, int32(n))
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = newPod(ns, fmt.Sprintf("%s-%d", group, i), podOpts{group: group})
		for _, m := range mods {
			m(pods[i])
		}
	}
	createPods(t, ctx, pods)
}

// requestPods lists the capacity-request pods of group, live.
func requestPods(t *testing.T, ctx context.Context, ns, group string) []corev1.Pod {
	t.Helper()
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: scheduling.CapacityRequestLabel + "=" + group})
	if err != nil {
		t.Fatalf("listing capacity-request pods of %s: %v", group, err)
	}
	return list.Items
}

// waitRequestsGone waits until group has no capacity-request pod left.
func waitRequestsGone(t *testing.T, ctx context.Context, ns, group string) {
	t.Helper()
	waitFor(t, ctx, "the capacity-request pods of "+group+" to be gone", func(ctx context.Context) (bool, error) {
		return len(requestPods(t, ctx, ns, group)) == 0, nil
	})
}

// autoscaleRecord is what watches of a namespace's pods and PodGroups saw,
// in the order the API server wrote it: each gang pod's creation, release
// (with the node it was pinned to in that write) and binding; each
// capacity-request pod as first created, where it was bound, and its
// deletion; and each Admitted condition a group went through.
type autoscaleRecord struct {
	mu  sync.Mutex
	seq int
	// Gang pods (PodGroupLabel), by name.
	created  map[string]int
	bornOpen []string
	released map[string]int
	pins     map[string]string // the pin the pod carried when it was released
	bound    map[string]string
	// Capacity-request pods (CapacityRequestLabel), by UID.
	requests       map[string]*corev1.Pod // as first seen
	requestBound   map[string]string
	requestDeleted map[string]int
	// admitted lists each group's distinct Admitted conditions in order.
	admitted map[string][]metav1.Condition
}

// watchAutoscaling starts the watches of ns; the namespace must be empty.
// They run until the test ends.
func watchAutoscaling(t *testing.T, ctx context.Context, ns string) *autoscaleRecord {
	t.Helper()
	r := &autoscaleRecord{
		created: map[string]int{}, released: map[string]int{}, pins: map[string]string{}, bound: map[string]string{},
		requests: map[string]*corev1.Pod{}, requestBound: map[string]string{}, requestDeleted: map[string]int{},
		admitted: map[string][]metav1.Condition{},
	}
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing pods: %v", err)
	}
	if len(pods.Items) > 0 {
		t.Fatalf("namespace %s already has %d pods", ns, len(pods.Items))
	}
	groups, err := muster.SchedulingV1alpha1().PodGroups(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing PodGroups: %v", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	follow := func(rv string, lw *cache.ListWatch, observe func(watch.EventType, any)) {
		w, err := watchtools.NewRetryWatcherWithContext(ctx, rv, lw)
		if err != nil {
			t.Fatalf("watching: %v", err)
		}
		wg.Go(func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					observe(ev.Type, ev.Object)
				}
			}
		})
	}
	follow(pods.ResourceVersion, &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return kube.CoreV1().Pods(ns).Watch(ctx, o)
	}}, func(typ watch.EventType, obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			r.observePod(typ, p)
		}
	})
	follow(groups.ResourceVersion, &cache.ListWatch{WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return muster.SchedulingV1alpha1().PodGroups(ns).Watch(ctx, o)
	}}, func(_ watch.EventType, obj any) {
		if pg, ok := obj.(*v1alpha1.PodGroup); ok {
			r.observeGroup(pg)
		}
	})
	return r
}

func (r *autoscaleRecord) observePod(typ watch.EventType, p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	if _, ok := p.Labels[scheduling.CapacityRequestLabel]; ok {
		// By UID: a request made again has the same pod names.
		uid := string(p.UID)
		if _, seen := r.requests[uid]; !seen {
			r.requests[uid] = p.DeepCopy()
		}
		if p.Spec.NodeName != "" {
			r.requestBound[uid] = p.Spec.NodeName
		}
		if _, seen := r.requestDeleted[uid]; !seen && (typ == watch.Deleted || p.DeletionTimestamp != nil) {
			r.requestDeleted[uid] = r.seq
		}
		return
	}
	if _, ok := p.Labels[scheduling.PodGroupLabel]; !ok {
		return
	}
	if _, seen := r.created[p.Name]; !seen {
		r.created[p.Name] = r.seq
		if !scheduling.HasGate(p) {
			r.bornOpen = append(r.bornOpen, p.Name)
		}
	}
	if _, seen := r.released[p.Name]; !seen && !scheduling.HasGate(p) {
		r.released[p.Name] = r.seq
		r.pins[p.Name] = scheduling.PinnedNode(p)
	}
	if _, seen := r.bound[p.Name]; !seen && p.Spec.NodeName != "" {
		r.bound[p.Name] = p.Spec.NodeName
	}
}

func (r *autoscaleRecord) observeGroup(pg *v1alpha1.PodGroup) {
	c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted)
	if c == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.admitted[pg.Name]
	if n := len(h); n > 0 && h[n-1].Status == c.Status && h[n-1].Reason == c.Reason && h[n-1].Message == c.Message {
		return
	}
	r.admitted[pg.Name] = append(h, *c)
}

// groupOf names the group a capacity-request pod asks for.
func groupOf(p *corev1.Pod) string { return p.Labels[scheduling.CapacityRequestLabel] }

// requestsOf returns, of group's capacity-request pods seen so far, how
// many were created, bound and deleted.
func (r *autoscaleRecord) requestsOf(group string) (created, bound, deleted int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, p := range r.requests {
		if groupOf(p) != group {
			continue
		}
		created++
		if r.requestBound[uid] != "" {
			bound++
		}
		if _, ok := r.requestDeleted[uid]; ok {
			deleted++
		}
	}
	return created, bound, deleted
}

// firstRequests returns group's capacity-request pods as first seen, those
// of a request made again too.
func (r *autoscaleRecord) firstRequests(group string) []*corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*corev1.Pod
	for _, p := range r.requests {
		if groupOf(p) == group {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp) ||
			out[i].CreationTimestamp.Equal(&out[j].CreationTimestamp) && out[i].Name < out[j].Name
	})
	return out
}

// releasedPods names the gang pods of ns ever released, sorted.
func (r *autoscaleRecord) releasedPods() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for name := range r.released {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// admittedHistory returns the Admitted conditions group went through.
func (r *autoscaleRecord) admittedHistory(group string) []metav1.Condition {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.admitted[group])
}

// sawAdmitted returns the first Admitted condition of group with reason, if
// the watch saw one.
func (r *autoscaleRecord) sawAdmitted(group, reason string) (metav1.Condition, bool) {
	for _, c := range r.admittedHistory(group) {
		if c.Reason == reason {
			return c, true
		}
	}
	return metav1.Condition{}, false
}

// describeAdmitted is group's Admitted history on one line, for failures
// and logs.
func (r *autoscaleRecord) describeAdmitted(group string) string {
	var out []string
	for _, c := range r.admittedHistory(group) {
		out = append(out, fmt.Sprintf("%s/%s %q", c.Status, c.Reason, c.Message))
	}
	return strings.Join(out, " -> ")
}

// expectReleasedWhole checks that all n gang pods were created gated and
// each was pinned in the write that released it, and that no gang pod was
// bound without having been released first.
func (r *autoscaleRecord) expectReleasedWhole(t *testing.T, n int) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.bornOpen) > 0 {
		t.Errorf("gang pods %v were created without Muster's gate", r.bornOpen)
	}
	if len(r.created) != n || len(r.released) != n {
		t.Fatalf("watch saw %d gang pods created and %d released, want %d of each", len(r.created), len(r.released), n)
	}
	for name, pin := range r.pins {
		if pin == "" {
			t.Errorf("gang pod %s was released without a pin to a node", name)
		}
	}
	for name := range r.bound {
		if _, ok := r.released[name]; !ok {
			t.Errorf("gang pod %s was bound to %s but never seen released", name, r.bound[name])
		}
	}
}

// expectRequestShape checks that capacity-request pods are what the issue
// says: labelled with their group and nothing of Muster's gang, owned by
// the PodGroup, never gated, of the lowest priority that never preempts,
// kept from disruption, and asking for what gangPod asks for.
func expectRequestShape(t *testing.T, pods []*corev1.Pod, pg *v1alpha1.PodGroup, gangPod *corev1.Pod) {
	t.Helper()
	want := gangPod.Spec.Containers[0].Resources.Requests
	for _, p := range pods {
		if got := p.Labels[scheduling.CapacityRequestLabel]; got != pg.Name {
			t.Errorf("capacity-request pod %s: label %s=%q, want %q", p.Name, scheduling.CapacityRequestLabel, got, pg.Name)
		}
		if _, ok := p.Labels[scheduling.PodGroupLabel]; ok {
			t.Errorf("capacity-request pod %s carries %s: it would be gated and counted", p.Name, scheduling.PodGroupLabel)
		}
		if len(p.Spec.SchedulingGates) > 0 {
			t.Errorf("capacity-request pod %s has scheduling gates %v", p.Name, p.Spec.SchedulingGates)
		}
		if p.Spec.PriorityClassName != scheduling.CapacityRequestPriorityClass {
			t.Errorf("capacity-request pod %s: priorityClassName %q, want %q", p.Name, p.Spec.PriorityClassName, scheduling.CapacityRequestPriorityClass)
		}
		if p.Spec.Priority == nil || *p.Spec.Priority != scheduling.CapacityRequestPriority {
			t.Errorf("capacity-request pod %s: priority %v, want %d", p.Name, p.Spec.Priority, scheduling.CapacityRequestPriority)
		}
		if p.Spec.PreemptionPolicy == nil || *p.Spec.PreemptionPolicy != corev1.PreemptNever {
			t.Errorf("capacity-request pod %s: preemptionPolicy %v, want Never", p.Name, p.Spec.PreemptionPolicy)
		}
		if got := p.Annotations[scheduling.KarpenterDoNotDisrupt]; got != "true" {
			t.Errorf("capacity-request pod %s: annotation %s=%q, want true", p.Name, scheduling.KarpenterDoNotDisrupt, got)
		}
		owner := metav1.GetControllerOf(p)
		if owner == nil || owner.Kind != "PodGroup" || owner.Name != pg.Name || owner.UID != pg.UID {
			t.Errorf("capacity-request pod %s: controller %+v, want PodGroup %s (uid %s)", p.Name, owner, pg.Name, pg.UID)
		}
		if len(p.Spec.Containers) != 1 || p.Spec.Containers[0].Name != scheduling.CapacityRequestContainer {
			t.Errorf("capacity-request pod %s: containers %v, want the one %q", p.Name, p.Spec.Containers, scheduling.CapacityRequestContainer)
			continue
		}
		got := p.Spec.Containers[0].Resources.Requests
		for name, q := range want {
			if g, ok := got[name]; !ok || g.Cmp(q) != 0 {
				t.Errorf("capacity-request pod %s: requests %s %v, want %v as the gang pod's", p.Name, name, got[name], q)
			}
		}
		if len(got) != len(want) {
			t.Errorf("capacity-request pod %s: requests %v, want %v", p.Name, got, want)
		}
	}
}

// expectNoneFor polls for d and fails as soon as cond reports something
// that must not happen.
func expectNoneFor(t *testing.T, ctx context.Context, d time.Duration, what string, cond func(ctx context.Context) string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, pollInterval, d, true, func(ctx context.Context) (bool, error) {
		if bad := cond(ctx); bad != "" {
			t.Fatalf("%s: %s", what, bad)
		}
		return false, nil
	})
	if ctx.Err() != nil {
		t.Fatalf("the test ran out of time while checking %s: %v", what, err)
	}
}

// expectEvents checks that the object named name has an Event of each
// reason, waiting a little for the recorder, which writes them
// asynchronously, and names the reasons it found if one is missing.
func expectEvents(t *testing.T, ctx context.Context, ns, name string, reasons ...string) {
	t.Helper()
	var have map[string]bool
	err := wait.PollUntilContextTimeout(ctx, pollInterval, 15*time.Second, true, func(ctx context.Context) (bool, error) {
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, nil
		}
		have = map[string]bool{}
		for _, e := range events.Items {
			have[e.Reason] = true
		}
		for _, r := range reasons {
			if !have[r] {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		var missing, found []string
		for _, r := range reasons {
			if !have[r] {
				missing = append(missing, r)
			}
		}
		for r := range have {
			found = append(found, r)
		}
		sort.Strings(found)
		t.Errorf("%s has no Event of reason %v; it has %v", name, missing, found)
	}
}

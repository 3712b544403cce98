package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
	"github.com/muster-dev/muster/test/cluster"
)

// poolKey labels and taints the nodes one capacity test adds for itself, so
// that no other test's pod lands there and the test knows their free capacity.
const poolKey = "e2e.muster.dev/pool"

// poolNodes adds count nodes of cpu CPUs reserved for namespace ns.
func poolNodes(t *testing.T, ctx context.Context, ns string, count int, cpu string, labels map[string]string) []string {
	t.Helper()
	l := map[string]string{poolKey: ns}
	for k, v := range labels {
		l[k] = v
	}
	prefix := ns
	if len(labels) > 0 {
		prefix += "-l"
	}
	names, err := env.AddNodes(ctx, cluster.NodeSpec{
		Prefix: prefix, Count: count, CPU: cpu, Memory: "64Gi", Labels: l,
		Taints: []corev1.Taint{{Key: poolKey, Value: ns, Effect: corev1.TaintEffectNoSchedule}},
	})
	if err != nil {
		t.Fatalf("adding nodes: %v", err)
	}
	return names
}

// poolPod is a gang member that runs only on its test's nodes.
func poolPod(ns, name, group, cpu, runFor string) *corev1.Pod {
	p := newPod(ns, name, podOpts{group: group, runFor: runFor})
	p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	p.Spec.NodeSelector = map[string]string{poolKey: ns}
	p.Spec.Tolerations = []corev1.Toleration{{Key: poolKey, Operator: corev1.TolerationOpEqual, Value: ns, Effect: corev1.TaintEffectNoSchedule}}
	return p
}

// createGang creates a PodGroup of n and its n pods, the pods in parallel.
func createGang(t *testing.T, ctx context.Context, ns, group string, n int, cpu, runFor string, mods ...func(*corev1.Pod)) {
	t.Helper()
	createGroup(t, ctx, ns, group, int32(n))
	createPods(t, ctx, gangPods(ns, group, n, cpu, runFor, mods...))
}

func gangPods(ns, group string, n int, cpu, runFor string, mods ...func(*corev1.Pod)) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	for i := range out {
		out[i] = poolPod(ns, fmt.Sprintf("%s-%d", group, i), group, cpu, runFor)
		for _, m := range mods {
			m(out[i])
		}
	}
	return out
}

// createPods creates pods at once, so that gangs complete at the same moment.
func createPods(t *testing.T, ctx context.Context, pods []*corev1.Pod) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(pods))
	for _, p := range pods {
		wg.Go(func() {
			if _, err := kube.CoreV1().Pods(p.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				errs <- fmt.Errorf("creating pod %s: %w", p.Name, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// waitAdmitted waits until the group's Admitted condition has the status and reason.
func waitAdmitted(t *testing.T, ctx context.Context, ns, name string, status metav1.ConditionStatus, reason string) *v1alpha1.PodGroup {
	t.Helper()
	return waitCondition(t, ctx, ns, name, v1alpha1.ConditionAdmitted, status, reason)
}

// waitCondition waits until the group's condition of type typ has the
// status and, unless empty, the reason.
func waitCondition(t *testing.T, ctx context.Context, ns, name, typ string, status metav1.ConditionStatus, reason string) *v1alpha1.PodGroup {
	t.Helper()
	var pg *v1alpha1.PodGroup
	waitFor(t, ctx, fmt.Sprintf("PodGroup %s %s=%s/%s", name, typ, status, reason), func(ctx context.Context) (bool, error) {
		var err error
		if pg, err = getGroup(ctx, ns, name); err != nil {
			return false, nil
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, typ)
		return c != nil && c.Status == status && (reason == "" || c.Reason == reason), nil
	})
	return pg
}

func admittedCondition(pg *v1alpha1.PodGroup) metav1.Condition {
	if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// waitBound waits until every pod of the group is bound, and returns them.
func waitBound(t *testing.T, ctx context.Context, ns, group string, n int) []corev1.Pod {
	t.Helper()
	var bound []corev1.Pod
	waitFor(t, ctx, fmt.Sprintf("%d pods of %s bound", n, group), func(ctx context.Context) (bool, error) {
		bound = bound[:0]
		for _, p := range groupPods(t, ctx, ns, group) {
			if p.Spec.NodeName != "" {
				bound = append(bound, p)
			}
		}
		return len(bound) == n, nil
	})
	return bound
}

func groupPods(t *testing.T, ctx context.Context, ns, group string) []corev1.Pod {
	t.Helper()
	list, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: scheduling.PodGroupLabel + "=" + group})
	if err != nil {
		t.Fatalf("listing pods of %s: %v", group, err)
	}
	return list.Items
}

// expectPinnedWhereBound checks that each released pod carries exactly one
// pin and that a bound pod runs on the node it was pinned to.
func expectPinnedWhereBound(t *testing.T, pods []corev1.Pod) {
	t.Helper()
	for i := range pods {
		p := &pods[i]
		if scheduling.HasGate(p) {
			continue
		}
		pinned := scheduling.PinnedNode(p)
		if pinned == "" {
			t.Errorf("released pod %s is not pinned to a node", p.Name)
			continue
		}
		if n := pinCount(p); n != 1 {
			t.Errorf("pod %s carries %d pins, want 1", p.Name, n)
		}
		if p.Spec.NodeName != "" && p.Spec.NodeName != pinned {
			t.Errorf("pod %s runs on %s but was pinned to %s", p.Name, p.Spec.NodeName, pinned)
		}
	}
}

func pinCount(p *corev1.Pod) int {
	n := 0
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
			for _, r := range term.MatchFields {
				if r.Key == scheduling.PinField {
					n++
				}
			}
		}
	}
	return n
}

// TestCapacityTwoGangsDoNotFitTogether: two gangs of 8 pods of 10 CPU on 4
// nodes of 32 CPU (12 places), completed at the same moment. One runs
// whole; the other waits whole with InsufficientCapacity, then runs whole
// once enough of the first has finished for it to fit. Two gangs never
// hold nodes at the same time but for that moment, and then each whole:
// a gang with a pod on a node has a place decided for every pod it still
// gates.
func TestCapacityTwoGangsDoNotFitTogether(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	poolNodes(t, ctx, ns, 4, "32", nil)
	createGroup(t, ctx, ns, "a", 8)
	createGroup(t, ctx, ns, "b", 8)
	var all []*corev1.Pod
	a, b := gangPods(ns, "a", 8, "10", "6s"), gangPods(ns, "b", 8, "10", "6s")
	for i := range a {
		all = append(all, a[i], b[i])
	}
	createPods(t, ctx, all)

	waited := ""
	done := map[string]bool{}
	waitFor(t, ctx, "both gangs to finish", func(ctx context.Context) (bool, error) {
		running, gated := map[string]int{}, map[string]int{}
		pods := listPods(t, ctx, ns)
		for i := range pods {
			p := &pods[i]
			g := p.Labels[scheduling.PodGroupLabel]
			if p.Spec.NodeName != "" && !scheduling.IsTerminal(p) {
				running[g]++
			}
			if scheduling.HasGate(p) {
				gated[g]++
			}
		}
		groups := map[string]*v1alpha1.PodGroup{}
		for _, g := range []string{"a", "b"} {
			pg, err := getGroup(ctx, ns, g)
			if err != nil {
				return false, nil
			}
			groups[g] = pg
		}
		// The second gang is admitted as soon as it fits: its 8 places of 12
		// once the first has at most 4 pods left running. Both then hold
		// nodes for a moment, and no more pods run than the nodes hold.
		if running["a"] > 0 && running["b"] > 0 && min(running["a"], running["b"]) > 12-8 {
			t.Fatalf("both gangs run more pods than the nodes hold: a %d running and %d gated, b %d running and %d gated",
				running["a"], gated["a"], running["b"], gated["b"])
		}
		// A gang that runs a pod is whole: its pods still gated are being
		// released (their patches are in flight), each to a place written in
		// the group before the first of them was released.
		for _, g := range []string{"a", "b"} {
			if running[g] > 0 && gated[g] > 0 {
				if unplaced := gatedWithoutPlace(t, ctx, ns, groups[g], pods); len(unplaced) > 0 {
					t.Fatalf("gang %s runs %d pods while %v stay gated with no place decided: a %d running and %d gated, b %d running and %d gated",
						g, running[g], unplaced, running["a"], gated["a"], running["b"], gated["b"])
				}
			}
		}
		expectPinnedWhereBound(t, pods)
		for _, g := range []string{"a", "b"} {
			pg := groups[g]
			if c := admittedCondition(pg); c.Reason == scheduling.ReasonInsufficientCapacity {
				if pg.Status.Gated != 8 {
					t.Fatalf("gang %s waits for capacity with %d of its 8 pods gated", g, pg.Status.Gated)
				}
				if !strings.Contains(c.Message, "8 pods requesting cpu 10 each") {
					t.Errorf("gang %s waiting message %q does not say what is short", g, c.Message)
				}
				waited = g
			}
			done[g] = meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionFinished)
		}
		return done["a"] && done["b"], nil
	})
	if waited == "" {
		t.Fatal("neither gang was ever seen waiting with InsufficientCapacity")
	}
	waitFor(t, ctx, "a Waiting event on the gang that did not fit", func(ctx context.Context) (bool, error) {
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + waited})
		if err != nil {
			return false, nil
		}
		for _, e := range events.Items {
			if e.Reason == "Waiting" && strings.Contains(e.Message, "needs 8 pods placed at once") {
				return true, nil
			}
		}
		return false, nil
	})
	for _, g := range []string{"a", "b"} {
		pg, _ := getGroup(ctx, ns, g)
		if pg.Status.Succeeded != 8 || pg.Status.Phase != v1alpha1.PodGroupSucceeded {
			t.Errorf("gang %s ended %s with %d succeeded, want Succeeded with 8", g, pg.Status.Phase, pg.Status.Succeeded)
		}
	}
}

// gatedWithoutPlace names the pods of pg's gang that were gated in pods,
// listed before pg was read, have no place in pg, and are gated still. A
// place goes from the group only once its pod is released, and a gate never
// comes back, so a pod gated after pg was read had its place then, if it
// had one: the pods named have none while their gang runs.
func gatedWithoutPlace(t *testing.T, ctx context.Context, ns string, pg *v1alpha1.PodGroup, pods []corev1.Pod) []string {
	t.Helper()
	placed := admission.PlacementsByUID(pg)
	suspects := map[types.UID]bool{}
	for i := range pods {
		p := &pods[i]
		if p.Labels[scheduling.PodGroupLabel] != pg.Name || !scheduling.HasGate(p) {
			continue
		}
		if _, ok := placed[p.UID]; !ok {
			suspects[p.UID] = true
		}
	}
	if len(suspects) == 0 {
		return nil
	}
	var names []string
	for _, p := range listPods(t, ctx, ns) {
		if suspects[p.UID] && scheduling.HasGate(&p) {
			names = append(names, p.Name)
		}
	}
	return names
}

// TestCapacityNodeSelector: a gang whose pods select a label that only
// some nodes carry is placed only on those nodes.
func TestCapacityNodeSelector(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	poolNodes(t, ctx, ns, 2, "32", nil)
	zoned := poolNodes(t, ctx, ns, 2, "32", map[string]string{"e2e.muster.dev/zone": "z1"})
	createGang(t, ctx, ns, "g", 4, "10", "", func(p *corev1.Pod) { p.Spec.NodeSelector["e2e.muster.dev/zone"] = "z1" })
	pods := waitBound(t, ctx, ns, "g", 4)
	for _, p := range pods {
		if p.Spec.NodeName != zoned[0] && p.Spec.NodeName != zoned[1] {
			t.Errorf("pod %s runs on %s, not on a node of zone z1 (%v)", p.Name, p.Spec.NodeName, zoned)
		}
	}
	expectPinnedWhereBound(t, pods)
}

// TestCapacityPriority: with the cluster full, a high-priority gang that
// arrives later is admitted before an earlier low-priority one once room
// frees. Priority comes from the pods' PriorityClass; the running gang has
// the same high priority, so the high gang waits for it rather than
// preempting it (equal priority never preempts), and the low gang, which
// has none, cannot preempt either.
func TestCapacityPriority(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	poolNodes(t, ctx, ns, 2, "32", nil)
	high := withPriorityClass(priorityClass(t, ctx, ns+"-high", 1000))
	createGang(t, ctx, ns, "running", 2, "30", "10m", high)
	waitBound(t, ctx, ns, "running", 2)

	createGang(t, ctx, ns, "low", 2, "30", "")
	waitAdmitted(t, ctx, ns, "low", metav1.ConditionFalse, scheduling.ReasonInsufficientCapacity)
	createGang(t, ctx, ns, "high", 2, "30", "", high)
	waitAdmitted(t, ctx, ns, "high", metav1.ConditionFalse, scheduling.ReasonInsufficientCapacity)
	running, err := getGroup(ctx, ns, "running")
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(running.Status.Conditions, v1alpha1.ConditionPreempted); c != nil || !meta.IsStatusConditionTrue(running.Status.Conditions, v1alpha1.ConditionAdmitted) {
		t.Fatalf("the running gang of the same priority was preempted: %s", groupState(ns, "running"))
	}

	for _, p := range groupPods(t, ctx, ns, "running") {
		if err := kube.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitAdmitted(t, ctx, ns, "high", metav1.ConditionTrue, "")
	waitBound(t, ctx, ns, "high", 2)
	low, err := getGroup(ctx, ns, "low")
	if err != nil {
		t.Fatal(err)
	}
	if c := admittedCondition(low); c.Status != metav1.ConditionFalse || c.Reason != scheduling.ReasonInsufficientCapacity {
		t.Errorf("low-priority gang: Admitted=%s/%s, want False/%s behind the high-priority one", c.Status, c.Reason, scheduling.ReasonInsufficientCapacity)
	}
}

// TestCapacityFastRelease: deleting gang A's running pods lets the waiting
// gang B be admitted before A's pods are gone (KEP-6143).
func TestCapacityFastRelease(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	poolNodes(t, ctx, ns, 2, "32", nil)
	const hold = "e2e.muster.dev/hold"
	createGang(t, ctx, ns, "a", 2, "30", "10m", func(p *corev1.Pod) { p.Finalizers = []string{hold} })
	waitBound(t, ctx, ns, "a", 2)
	createGang(t, ctx, ns, "b", 2, "30", "")
	waitAdmitted(t, ctx, ns, "b", metav1.ConditionFalse, scheduling.ReasonInsufficientCapacity)

	for _, p := range groupPods(t, ctx, ns, "a") {
		if err := kube.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitAdmitted(t, ctx, ns, "b", metav1.ConditionTrue, "")
	if left := groupPods(t, ctx, ns, "a"); len(left) != 2 {
		t.Fatalf("gang b was admitted, but only %d of a's 2 pods still exist: the test proves nothing", len(left))
	}
	for _, p := range groupPods(t, ctx, ns, "a") {
		patch := []byte(`[{"op":"test","path":"/metadata/finalizers/0","value":"` + hold + `"},{"op":"remove","path":"/metadata/finalizers/0"}]`)
		if _, err := kube.CoreV1().Pods(ns).Patch(ctx, p.Name, types.JSONPatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatalf("releasing %s: %v", p.Name, err)
		}
	}
	waitBound(t, ctx, ns, "b", 2)
}

// TestCapacityLeaderKilledMidRelease: the controller is killed after it
// recorded a placement but before it could patch the pods (a policy denies
// its pod writes meanwhile). The restarted controller carries out the same
// placement: each pod pinned once, to the recorded node, and no node
// over-committed.
func TestCapacityLeaderKilledMidRelease(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	ns := namespace(t, ctx)
	nodes := poolNodes(t, ctx, ns, 3, "32", nil)
	denyMusterPodWrites(t, ctx, ns)

	createGang(t, ctx, ns, "g", 6, "10", "")
	pg := waitAdmitted(t, ctx, ns, "g", metav1.ConditionTrue, "")
	if len(pg.Status.Placements) != 6 {
		t.Fatalf("admitted with %d placements recorded, want 6", len(pg.Status.Placements))
	}
	recorded := map[string]string{}
	for _, pl := range pg.Status.Placements {
		recorded[pl.Pod] = pl.Node
	}
	for _, p := range groupPods(t, ctx, ns, "g") {
		if !scheduling.HasGate(&p) {
			t.Fatalf("pod %s was released although the policy denies Muster's pod writes", p.Name)
		}
	}
	env.KillMuster()
	allowMusterPodWrites(t, ctx, ns)
	if err := env.RestartMuster(ctx); err != nil {
		t.Fatal(err)
	}

	pods := waitBound(t, ctx, ns, "g", 6)
	expectPinnedWhereBound(t, pods)
	cpu := map[string]int64{}
	for _, p := range pods {
		if want := recorded[p.Name]; p.Spec.NodeName != want {
			t.Errorf("pod %s runs on %s, but the placement recorded before the crash was %s", p.Name, p.Spec.NodeName, want)
		}
		cpu[p.Spec.NodeName] += p.Spec.Containers[0].Resources.Requests.Cpu().Value()
	}
	for _, n := range nodes {
		if cpu[n] > 32 {
			t.Errorf("node %s holds %d CPU of pods, more than its 32", n, cpu[n])
		}
	}
}

func musterUser() string {
	return "system:serviceaccount:" + cluster.MusterNamespace + ":" + cluster.MusterService
}

// denyMusterPodWrites installs a ValidatingAdmissionPolicy that refuses
// Muster's updates to pods of namespace ns, and waits until it applies.
func denyMusterPodWrites(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	fail := admissionregistrationv1.Fail
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				}}},
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "muster", Expression: fmt.Sprintf("request.userInfo.username == %q", musterUser())}},
			Validations:     []admissionregistrationv1.Validation{{Expression: "false", Message: "the e2e test holds Muster's pod writes"}},
		},
	}
	if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating policy: %v", err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        ns,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating policy binding: %v", err)
	}
	t.Cleanup(func() { allowMusterPodWrites(t, context.Background(), ns) })
	// The policy applies once kube-apiserver's policy informer has it: probe
	// with a dry-run update as Muster until it is refused. The probe takes
	// Muster's finalizer off a pod of a group that does not exist, a write
	// the muster-pod-writes policy allows, so only this test's policy can
	// refuse it.
	probe := createPod(t, ctx, poolPod(ns, "probe", "probe", "1m", ""))
	impersonated := env.ImpersonatingClient(musterUser())
	waitFor(t, ctx, "the policy to deny Muster's pod writes", func(ctx context.Context) (bool, error) {
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		_, err := impersonated.CoreV1().Pods(ns).Patch(ctx, probe.Name, types.MergePatchType, patch, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "holds Muster's pod writes"), nil
	})
}

func allowMusterPodWrites(t *testing.T, ctx context.Context, ns string) {
	_ = kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, ns, metav1.DeleteOptions{})
	_ = kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(ctx, ns, metav1.DeleteOptions{})
}

// TestCapacityGangLargerThanCluster: a gang that can never fit waits with a
// clear message and does not hold up the smaller gang behind it.
func TestCapacityGangLargerThanCluster(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	poolNodes(t, ctx, ns, 2, "32", nil)
	createGang(t, ctx, ns, "huge", 4, "20", "")
	pg := waitAdmitted(t, ctx, ns, "huge", metav1.ConditionFalse, scheduling.ReasonExceedsClusterCapacity)
	if msg := admittedCondition(pg).Message; !strings.Contains(msg, "can never fit") || !strings.Contains(msg, "4 pods requesting cpu 20 each, 2 fit") {
		t.Errorf("message %q does not say that the gang can never fit and why", msg)
	}
	createGang(t, ctx, ns, "small", 2, "10", "")
	waitBound(t, ctx, ns, "small", 2)
	if pg, _ := getGroup(ctx, ns, "huge"); pg.Status.Gated != 4 {
		t.Errorf("huge gang has %d of 4 pods gated, want all", pg.Status.Gated)
	}
}

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/cluster"
)

// placementTimeout bounds each placement test. A placement that the
// scheduler refuses shows within seconds as an Unschedulable pod, so a
// failing test ends quickly instead of stalling the suite.
const placementTimeout = 90 * time.Second

// gangLabel is a label every pod of a placement test's gang carries, with
// the group's name, for the gang's own affinity and spread rules to select.
const gangLabel = "e2e.muster.dev/gang"

// placementNodes adds count nodes of cpu CPUs reserved for namespace ns, as
// poolNodes does, each with labels, named <ns>-<prefix>-<i>. They are
// deleted once the test's namespace is gone, so that nodes with the test's
// zones or devices do not outlive it.
func placementNodes(t *testing.T, ctx context.Context, ns, prefix string, count int, cpu string, labels map[string]string) []string {
	t.Helper()
	l := map[string]string{poolKey: ns}
	for k, v := range labels {
		l[k] = v
	}
	names, err := env.AddNodes(ctx, cluster.NodeSpec{
		Prefix: ns + "-" + prefix, Count: count, CPU: cpu, Memory: "64Gi", Labels: l,
		Taints: []corev1.Taint{{Key: poolKey, Value: ns, Effect: corev1.TaintEffectNoSchedule}},
	})
	afterNamespace(t, ns, func(ctx context.Context) {
		for _, n := range names {
			if n == "" {
				continue
			}
			if err := kube.CoreV1().Nodes().Delete(ctx, n, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
				t.Errorf("deleting node %s: %v", n, err)
			}
		}
	})
	if err != nil {
		t.Fatalf("adding nodes: %v", err)
	}
	return names
}

// afterNamespace runs fn at the end of the test, once the test's namespace
// is gone: cluster-scoped objects (nodes, PersistentVolumes, DeviceClasses,
// ResourceSlices) are deleted after the pods that use them.
func afterNamespace(t *testing.T, ns string, fn func(ctx context.Context)) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		if err := kube.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
			t.Errorf("deleting namespace %s: %v", ns, err)
		}
		if took, err := waitNamespaceGone(ctx, kube, ns, time.Minute); err != nil {
			t.Errorf("namespace %s not gone after %s: %v", ns, took, err)
		}
		fn(ctx)
	})
}

// placementWatch samples a namespace's pods and groups for the whole test
// and records what must never happen to a gang:
//   - kube-scheduler reports a pod of it Unschedulable (a placement that the
//     scheduler refuses leaves the gang half bound);
//   - a pod of it is released while fewer than minCount of its pods exist,
//     or before the group is Admitted (Admitted is written before any gate
//     comes off).
type placementWatch struct {
	watchErrors
	cancel context.CancelFunc
	done   chan struct{}
}

// watchErrors collects what a watch saw go wrong, each key once.
type watchErrors struct {
	mu   sync.Mutex
	errs []string
	seen map[string]bool
}

func watchPlacement(t *testing.T, ctx context.Context, ns string) *placementWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	w := &placementWatch{cancel: cancel, done: make(chan struct{})}
	go w.run(ctx, ns)
	t.Cleanup(w.stop)
	return w
}

func (w *placementWatch) stop() {
	w.cancel()
	<-w.done
}

func (w *watchErrors) record(key, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	if !w.seen[key] {
		w.seen[key] = true
		w.errs = append(w.errs, msg)
	}
}

// err returns what went wrong so far, or "".
func (w *watchErrors) err() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.errs, "; ")
}

// check fails the test if anything went wrong so far.
func (w *watchErrors) check(t *testing.T) {
	t.Helper()
	if e := w.err(); e != "" {
		t.Fatal(e)
	}
}

func (w *placementWatch) run(ctx context.Context, ns string) {
	defer close(w.done)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		w.sample(ctx, ns)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (w *placementWatch) sample(ctx context.Context, ns string) {
	pods, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: scheduling.PodGroupLabel})
	if err != nil {
		return
	}
	// Groups are listed after pods: a group seen here is at least as new as
	// the release of any pod in the list.
	groups, err := muster.SchedulingV1alpha1().PodGroups(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	byName := map[string]*v1alpha1.PodGroup{}
	for i := range groups.Items {
		byName[groups.Items[i].Name] = &groups.Items[i]
	}
	exist, released := map[string]int{}, map[string][]string{}
	for i := range pods.Items {
		p := &pods.Items[i]
		g := p.Labels[scheduling.PodGroupLabel]
		exist[g]++
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				w.record("unschedulable/"+p.Name, fmt.Sprintf("pod %s of gang %s (pinned by %s) is Unschedulable: %s", p.Name, g, pinDescription(p), c.Message))
			}
		}
		if !scheduling.HasGate(p) {
			released[g] = append(released[g], p.Name)
		}
	}
	for g, names := range released {
		pg := byName[g]
		if pg == nil || pg.Spec.SchedulingPolicy.Gang == nil {
			continue
		}
		if min := int(pg.Spec.SchedulingPolicy.Gang.MinCount); exist[g] < min {
			w.record("partial/"+g, fmt.Sprintf("gang %s released %v while only %d of its %d pods existed", g, names, exist[g], min))
		}
		if !meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionAdmitted) && !meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionFinished) {
			w.record("early/"+g, fmt.Sprintf("gang %s released %v before it was Admitted (conditions %v)", g, names, pg.Status.Conditions))
		}
	}
}

// pinDescription says which node Muster pinned a pod to, for failure
// messages.
func pinDescription(p *corev1.Pod) string {
	if n := scheduling.PinnedNode(p); n != "" {
		return "Muster to " + n
	}
	return "nothing"
}

// expectRunningWhole waits until all n pods of the group are bound and
// Running, failing at once if the watch saw a pod Unschedulable or released
// early, and returns the pods.
func expectRunningWhole(t *testing.T, ctx context.Context, w *placementWatch, ns, group string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		if e := w.err(); e != "" {
			t.Fatalf("gang %s did not run whole: %s", group, e)
		}
		pods = groupPods(t, ctx, ns, group)
		running := 0
		for _, p := range pods {
			if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == n && len(pods) == n, nil
	})
	if err != nil {
		t.Fatalf("waiting for all %d pods of gang %s Running: %v; %s; pods %s", n, group, err, groupState(ns, group), podStates(pods))
	}
	w.check(t)
	t.Logf("gang %s runs whole: %s", group, podStates(pods))
	return pods
}

// groupState is a one-line account of a group's conditions, for failures.
func groupState(ns, name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pg, err := getGroup(ctx, ns, name)
	if err != nil {
		return fmt.Sprintf("PodGroup %s: %v", name, err)
	}
	var out []string
	for _, c := range pg.Status.Conditions {
		out = append(out, fmt.Sprintf("%s=%s/%s %q", c.Type, c.Status, c.Reason, c.Message))
	}
	return fmt.Sprintf("PodGroup %s %s: %s", name, pg.Status.Phase, strings.Join(out, ", "))
}

// podStates is a one-line account of pods: name, gate, node and phase.
func podStates(pods []corev1.Pod) string {
	var out []string
	for _, p := range pods {
		s := p.Name + ":"
		if scheduling.HasGate(&p) {
			s += "gated"
		} else {
			s += string(p.Status.Phase) + "@" + p.Spec.NodeName
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// podsPerNode counts the pods on each node.
func podsPerNode(pods []corev1.Pod) map[string]int {
	per := map[string]int{}
	for _, p := range pods {
		per[p.Spec.NodeName]++
	}
	return per
}

// gangMember labels a pod with its gang for the gang's own rules.
func gangMember(p *corev1.Pod) {
	p.Labels[gangLabel] = p.Labels[scheduling.PodGroupLabel]
}

// selectGang selects the pods of the gang.
func selectGang(group string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: map[string]string{gangLabel: group}}
}

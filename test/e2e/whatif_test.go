package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
)

// whatIf asks, through client, what admission would decide for pods (a v1
// List of them) in ns, with the group pg created beside them when not nil.
func whatIf(t *testing.T, ctx context.Context, client versioned.Interface, ns string, pg *v1alpha1.PodGroup, pods []*corev1.Pod) *v1alpha1.WhatIfReviewStatus {
	t.Helper()
	list := &corev1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	for _, p := range pods {
		p = p.DeepCopy()
		p.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		list.Items = append(list.Items, runtime.RawExtension{Object: p})
	}
	raw, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	r, err := client.SchedulingV1alpha1().WhatIfReviews(ns).Create(ctx, &v1alpha1.WhatIfReview{
		Spec: v1alpha1.WhatIfReviewSpec{Object: runtime.RawExtension{Raw: raw}, PodGroup: pg},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("what-if in %s: %v", ns, err)
	}
	return &r.Status
}

// tenantMuster is a Muster client acting as a user who may edit ns alone,
// through kube-apiserver: the built-in edit role, with Muster's roles
// folded into it.
func tenantMuster(t *testing.T, ctx context.Context, ns string) versioned.Interface {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: editor(t, ctx, ns)}
	return versioned.NewForConfigOrDie(cfg)
}

// TestWhatIfWouldRunHere: a what-if says the gang would run now, and on
// which node each pod would go; the same gang, submitted next, is placed
// on exactly those nodes. The what-if created nothing and recorded no
// event.
func TestWhatIfWouldRunHere(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	poolNodes(t, ctx, ns, 3, "32", nil)
	// 20 CPU each on 32-CPU nodes: one pod per node, so the placement is
	// the scheduler's filters' and scores' answer, not a free choice.
	pods := gangPods(ns, "trio", 3, "20", "")
	st := whatIf(t, ctx, muster, ns, newGroupObject(ns, "trio", 3), pods)
	if !st.Admitted || len(st.Placements) != 3 || st.PodGroup != "trio" || st.MinCount != 3 {
		t.Fatalf("what-if = %+v, want trio admitted with 3 placements", st)
	}
	if _, err := getGroup(ctx, ns, "trio"); err == nil {
		t.Fatal("the what-if created PodGroup trio")
	}
	if l, err := kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Fatalf("the what-if left pods in %s: %v, %v", ns, l, err)
	}
	if l, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Fatalf("the what-if recorded events in %s: %v, %v", ns, l, err)
	}
	want := map[string]string{}
	for _, p := range st.Placements {
		want[p.Pod] = p.Node
	}
	createGang(t, ctx, ns, "trio", 3, "20", "")
	for _, p := range waitBound(t, ctx, ns, "trio", 3) {
		if want[p.Name] != p.Spec.NodeName {
			t.Errorf("pod %s runs on %s; the what-if said %s", p.Name, p.Spec.NodeName, want[p.Name])
		}
	}
	t.Logf("what-if placements: %v", st.Placements)
}

// TestWhatIfWaitsWithTheMessage: a what-if for a gang that does not fit
// says it waits, and why; the gang submitted next waits with that reason
// and that message.
func TestWhatIfWaitsWithTheMessage(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	poolNodes(t, ctx, ns, 2, "32", nil)
	createGang(t, ctx, ns, "holds", 2, "20", "")
	waitBound(t, ctx, ns, "holds", 2)
	pods := gangPods(ns, "waits", 2, "20", "")
	st := whatIf(t, ctx, muster, ns, newGroupObject(ns, "waits", 2), pods)
	if st.Admitted || st.Reason != scheduling.ReasonInsufficientCapacity || st.Message == "" || len(st.Placements) != 0 {
		t.Fatalf("what-if = %+v, want waits: InsufficientCapacity with a message and no placement", st)
	}
	if st.Queue.Position < 1 || st.Queue.Waiting < st.Queue.Position {
		t.Errorf("what-if queue = %+v, want a position among the waiting", st.Queue)
	}
	createGang(t, ctx, ns, "waits", 2, "20", "")
	pg := waitAdmitted(t, ctx, ns, "waits", metav1.ConditionFalse, scheduling.ReasonInsufficientCapacity)
	if c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted); c.Message != st.Message {
		t.Errorf("the gang waits with\n  %q\nthe what-if said\n  %q", c.Message, st.Message)
	}
	// Now it waits, the queue shows it.
	waitFor(t, ctx, "waits in the queue", func(ctx context.Context) (bool, error) {
		p, err := muster.SchedulingV1alpha1().PendingPodGroups(ns).Get(ctx, "waits", metav1.GetOptions{})
		return err == nil && p.Reason == scheduling.ReasonInsufficientCapacity && p.Pods == 2 && p.MinCount == 2, nil
	})
	t.Logf("what-if: %s: %s", st.Reason, st.Message)
}

// TestWhatIfWouldPreempt: a what-if for a high-priority gang on nodes a
// low-priority gang of another namespace holds says whom it would
// preempt; submitted, it preempts exactly that gang. The tenant who asks
// learns that it would preempt a gang of some priority and size, never
// which, nor any name of the other namespace, in the what-if or the
// queue.
func TestWhatIfWouldPreempt(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	mine, theirs := namespace(t, ctx), namespace(t, ctx)
	pool := newTenantPool(t, ctx, "whatif")
	createPods(t, ctx, pool.gang(theirs, "theirs-gang", pool.low))
	waitBound(t, ctx, theirs, "theirs-gang", 4)
	// Another of their gangs waits in the queue, which the tenant must
	// not see by name either.
	createPods(t, ctx, pool.gang(theirs, "theirs-waiting", pool.low))
	waitAdmitted(t, ctx, theirs, "theirs-waiting", metav1.ConditionFalse, "")

	gang := pool.gang(mine, "my-gang", pool.high)
	admin := whatIf(t, ctx, muster, mine, nil, gang)
	if admin.Admitted || admin.Reason != scheduling.ReasonPreempting || len(admin.Preemptions) != 1 {
		t.Fatalf("admin's what-if = %+v, want it to preempt one gang", admin)
	}
	if p := admin.Preemptions[0]; p.Namespace != theirs || p.PodGroup != "theirs-gang" || p.Pods != 4 || p.Priority != 100 {
		t.Errorf("admin's what-if would preempt %+v, want %s/theirs-gang, 4 pods of priority 100", p, theirs)
	}
	tenant := tenantMuster(t, ctx, mine)
	st := whatIf(t, ctx, tenant, mine, nil, gang)
	if len(st.Preemptions) != 1 || st.Preemptions[0].Namespace != "" || st.Preemptions[0].PodGroup != "" || st.Preemptions[0].Priority != 100 {
		t.Errorf("tenant's what-if preemptions = %+v, want one gang of priority 100, unnamed", st.Preemptions)
	}
	queue, err := tenant.SchedulingV1alpha1().PendingPodGroups(mine).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("tenant lists the queue of %s: %v", mine, err)
	}
	if _, err := tenant.SchedulingV1alpha1().PendingPodGroups("").List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("a tenant listed the queue of every namespace")
	}
	for what, obj := range map[string]any{"what-if": st, "queue": queue} {
		b, _ := json.Marshal(obj)
		for _, name := range []string{theirs, "theirs-gang", "theirs-waiting"} {
			if strings.Contains(string(b), name) {
				t.Errorf("the tenant's %s names %q: %s", what, name, b)
			}
		}
	}

	createPods(t, ctx, gang)
	marked := waitCondition(t, ctx, theirs, "theirs-gang", v1alpha1.ConditionPreempted, metav1.ConditionTrue, scheduling.ReasonPreemptionByMuster)
	waitBound(t, ctx, mine, "my-gang", 4)
	if others, err := getGroup(ctx, theirs, "theirs-waiting"); err != nil || meta.IsStatusConditionTrue(others.Status.Conditions, v1alpha1.ConditionPreempted) {
		t.Errorf("theirs-waiting was preempted too (%v), or cannot be read (%v)", others, err)
	}
	var victims []string
	for _, g := range []string{"theirs-gang", "theirs-waiting"} {
		if pg, err := getGroup(ctx, theirs, g); err == nil && meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionPreempted) {
			victims = append(victims, g)
		}
	}
	if !slices.Equal(victims, []string{"theirs-gang"}) {
		t.Errorf("preempted %v; the what-if said theirs-gang", victims)
	}
	t.Logf("admin's what-if: %s: %s; victim marked at %v", admin.Reason, admin.Message, marked.Status.Conditions)
}

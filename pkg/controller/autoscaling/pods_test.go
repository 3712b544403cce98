package autoscaling

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

func demandOf(n int, mod ...func(*corev1.Pod)) Demand {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = gangPod("p", mod...)
	}
	sets, hash := PodSets(pods, "g", testRequestImage)
	return Demand{Namespace: "ns", Name: "g", UID: "uid-g", PodSets: sets, Hash: hash}
}

// TestPodRequester runs the capacity-request pods Requester on a fake
// clientset: what it creates, that it is idempotent, that a changed demand
// replaces the pods, that State counts what is bound, and Withdraw.
func TestPodRequester(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kube := fake.NewClientset()
	r := NewPods(kube, 4)
	synced := r.Start(ctx, func(scheduling.GroupKey) {})
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) { return synced(), nil }); err != nil {
		t.Fatal("informer never synced")
	}
	list := func() []corev1.Pod {
		l, err := kube.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{LabelSelector: scheduling.CapacityRequestLabel})
		if err != nil {
			t.Fatal(err)
		}
		return l.Items
	}
	waitState := func(what string, ok func(State, bool) bool) State {
		t.Helper()
		var st State
		var has bool
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
			st, has = r.State(scheduling.NewGroupKey("ns", "g"))
			return ok(st, has), nil
		}); err != nil {
			t.Fatalf("%s: state %+v, exists %v", what, st, has)
		}
		return st
	}

	d := demandOf(3)
	if err := r.Request(ctx, d); err != nil {
		t.Fatal(err)
	}
	pods := list()
	if len(pods) != 3 {
		t.Fatalf("created %d pods, want 3", len(pods))
	}
	for _, p := range pods {
		if p.Labels[scheduling.CapacityRequestLabel] != "g" || p.Annotations[scheduling.CapacityRequestHashAnnotation] != d.Hash {
			t.Errorf("pod %s: labels %v, annotations %v", p.Name, p.Labels, p.Annotations)
		}
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].UID != "uid-g" || p.OwnerReferences[0].Kind != "PodGroup" || !*p.OwnerReferences[0].Controller {
			t.Errorf("pod %s: owners %+v", p.Name, p.OwnerReferences)
		}
	}
	st := waitState("three requested", func(st State, ok bool) bool { return ok && st.Requested == 3 })
	if st.Provisioned != 0 || st.Hash != d.Hash || st.Kind != KindPods || st.Name != "pods labelled scheduling.muster.dev/capacity-request=g" {
		t.Errorf("state %+v", st)
	}

	// Idempotent: asking again creates nothing.
	if err := r.Request(ctx, d); err != nil || len(list()) != 3 {
		t.Fatalf("second request: err %v, %d pods", err, len(list()))
	}

	// Two are bound: State counts them.
	for _, p := range pods[:2] {
		p.Spec.NodeName = "node-1"
		if _, err := kube.CoreV1().Pods("ns").Update(ctx, &p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitState("two bound", func(st State, ok bool) bool { return ok && st.Provisioned == 2 })

	// The gang changed: the old pods go, new ones come.
	d2 := demandOf(2, func(p *corev1.Pod) { p.Spec.NodeSelector["pool"] = "other" })
	waitState("synced", func(st State, ok bool) bool { return ok && st.Requested == 3 })
	if err := r.Request(ctx, d2); err != nil {
		t.Fatal(err)
	}
	pods = list()
	if len(pods) != 2 {
		t.Fatalf("after a changed demand: %d pods, want 2", len(pods))
	}
	for _, p := range pods {
		if p.Annotations[scheduling.CapacityRequestHashAnnotation] != d2.Hash || p.Spec.NodeSelector["pool"] != "other" {
			t.Errorf("pod %s is of the old demand", p.Name)
		}
	}
	waitState("replaced", func(st State, ok bool) bool { return ok && st.Hash == d2.Hash && st.Requested == 2 })

	if err := r.Withdraw(ctx, scheduling.NewGroupKey("ns", "g")); err != nil {
		t.Fatal(err)
	}
	if n := len(list()); n != 0 {
		t.Fatalf("after Withdraw: %d pods", n)
	}
	waitState("withdrawn", func(_ State, ok bool) bool { return !ok })
	if err := r.Withdraw(ctx, scheduling.NewGroupKey("ns", "g")); err != nil {
		t.Errorf("withdrawing nothing: %v", err)
	}

	// A pod someone else labelled, which no PodGroup controls, is none of
	// the requester's: not counted, and never deleted.
	theirs := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "theirs", Labels: map[string]string{scheduling.CapacityRequestLabel: "g"}}}
	if _, err := kube.CoreV1().Pods("ns").Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := r.Request(ctx, d); err != nil {
		t.Fatal(err)
	}
	waitState("made again beside it", func(st State, ok bool) bool { return ok && st.Requested == 3 })
	if err := r.Withdraw(ctx, scheduling.NewGroupKey("ns", "g")); err != nil {
		t.Fatal(err)
	}
	if got := list(); len(got) != 1 || got[0].Name != "theirs" {
		t.Errorf("after Withdraw: %d pods left, want only theirs", len(got))
	}
}

// TestPodRequesterWithdrawsWhatItMade checks that Withdraw deletes the
// pods this requester created though its informer does not show them yet:
// the withdrawal before a gang's release must leave none behind.
func TestPodRequesterWithdrawsWhatItMade(t *testing.T) {
	ctx := context.Background()
	kube := fake.NewClientset()
	r := NewPods(kube, 4) // not started: the informer shows nothing
	if err := r.Request(ctx, demandOf(3)); err != nil {
		t.Fatal(err)
	}
	if err := r.Withdraw(ctx, scheduling.NewGroupKey("ns", "g")); err != nil {
		t.Fatal(err)
	}
	l, err := kube.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 0 {
		t.Errorf("%d pods left after Withdraw, want 0", len(l.Items))
	}
}

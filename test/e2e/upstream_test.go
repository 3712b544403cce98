package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	"github.com/muster-dev/muster/test/cluster"
)

// upstreamGates turn on the upstream Workload API: kube-apiserver serves
// scheduling.k8s.io/v1beta1 PodGroups and keeps a pod's
// spec.schedulingGroup, and kube-scheduler gang-schedules the pods of a
// PodGroup whose policy is gang.
var upstreamGates = func(o *cluster.Options) {
	o.APIServerArgs = append(o.APIServerArgs, "--feature-gates=GenericWorkload=true", "--runtime-config=scheduling.k8s.io/v1beta1=true")
	o.SchedulerArgs = append(o.SchedulerArgs, "--feature-gates=GenericWorkload=true")
	o.ControllerManagerArgs = append(o.ControllerManagerArgs, "--feature-gates=GenericWorkload=true")
}

// TestUpstreamPodGroupBesideMuster runs on a cluster of its own with the
// GenericWorkload gate on (Kubernetes 1.37; earlier releases skip it).
//   - kube-scheduler gang-schedules on its own: 2 pods that name an upstream
//     PodGroup of minCount 3 in spec.schedulingGroup, and carry no Muster
//     label, stay unbound; the third binds all 3. Muster never touches
//     them: no gate, no finalizer.
//   - A pod with Muster's group label that also names an upstream PodGroup
//     passes both, Muster's first: 3 of a gang of 4 wait at Muster's gate,
//     unbound, and the 4th has Muster release all 4, which kube-scheduler's
//     gang then binds. They run, Muster counts 4 succeeded, and no pod is
//     left gated, unbound or on Muster's finalizer.
func TestUpstreamPodGroupBesideMuster(t *testing.T) {
	// The suite's cluster runs the same release as the one started here.
	sv, err := kube.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v, err := version.ParseGeneric(sv.GitVersion); err != nil || !v.AtLeast(version.MajorMinor(1, 37)) {
		t.Skipf("Kubernetes %s: GenericWorkload serves scheduling.k8s.io/v1beta1 from 1.37 (%v)", sv.GitVersion, err)
	}
	c := clusterOfItsOwn(t, upstreamGates)
	kc := kubernetes.NewForConfigOrDie(c.Config)
	mc := versioned.NewForConfigOrDie(c.Config)
	ctx := testContext(t, 4*time.Minute)
	if _, err := kc.Discovery().ServerResourcesForGroupVersion(schedulingv1beta1.SchemeGroupVersion.String()); err != nil {
		t.Fatalf("kube-apiserver with GenericWorkload on does not serve %s: %v", schedulingv1beta1.SchemeGroupVersion, err)
	}
	ns := "upstream"
	if _, err := kc.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitForDefaultServiceAccount(ctx, ns); err != nil {
		t.Fatal(err)
	}
	upstreamGang := func(name string, minCount int32) {
		t.Helper()
		_, err := kc.SchedulingV1beta1().PodGroups(ns).Create(ctx, &schedulingv1beta1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
				Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount},
			}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating upstream PodGroup %s: %v", name, err)
		}
	}
	create := func(name, upstream string, o podOpts) *corev1.Pod {
		t.Helper()
		p := newPod(ns, name, o)
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(upstream)}
		created, err := kc.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod %s: %v", name, err)
		}
		if created.Spec.SchedulingGroup == nil {
			t.Fatalf("pod %s lost spec.schedulingGroup: is GenericWorkload off?", name)
		}
		return created
	}
	pods := func(prefix string, n int) []corev1.Pod {
		var out []corev1.Pod
		for i := range n {
			p, err := kc.CoreV1().Pods(ns).Get(ctx, fmt.Sprintf("%s-%d", prefix, i), metav1.GetOptions{})
			if err != nil {
				t.Fatalf("getting pod %s-%d: %v", prefix, i, err)
			}
			out = append(out, *p)
		}
		return out
	}
	expectUnbound := func(prefix string, n int, why string) {
		t.Helper()
		// Long enough for kube-scheduler to have tried (it binds a free pod
		// in well under a second here).
		time.Sleep(3 * time.Second)
		for _, p := range pods(prefix, n) {
			if p.Spec.NodeName != "" {
				t.Errorf("pod %s is bound to %s; want it unbound: %s", p.Name, p.Spec.NodeName, why)
			}
		}
	}
	waitBound := func(prefix string, n int) {
		t.Helper()
		waitFor(t, ctx, fmt.Sprintf("the %d pods %s-* to be bound", n, prefix), func(ctx context.Context) (bool, error) {
			for i := range n {
				p, err := kc.CoreV1().Pods(ns).Get(ctx, fmt.Sprintf("%s-%d", prefix, i), metav1.GetOptions{})
				if err != nil || p.Spec.NodeName == "" {
					return false, nil
				}
			}
			return true, nil
		})
	}

	// kube-scheduler's own gang, with no Muster label.
	upstreamGang("alone", 3)
	for i := range 2 {
		create(fmt.Sprintf("alone-%d", i), "alone", podOpts{runFor: "5s"})
	}
	expectUnbound("alone", 2, "kube-scheduler's gang of 3 has only 2 pods")
	create("alone-2", "alone", podOpts{runFor: "5s"})
	waitBound("alone", 3)
	for _, p := range pods("alone", 3) {
		if isGated(&p) || scheduling.HasTrackingFinalizer(&p) {
			t.Errorf("pod %s, which has no Muster label, has gates %v and finalizers %v", p.Name, p.Spec.SchedulingGates, p.Finalizers)
		}
	}

	// Both: Muster's gang and kube-scheduler's, of the same 4 pods.
	upstreamGang("both", 4)
	both := podOpts{group: "both", runFor: "5s", annotations: map[string]string{scheduling.MinCountAnnotation: "4"}}
	for i := range 3 {
		create(fmt.Sprintf("both-%d", i), "both", both)
	}
	expectUnbound("both", 3, "Muster's gang of 4 has only 3 pods")
	for _, p := range pods("both", 3) {
		if !isGated(&p) {
			t.Errorf("pod %s has no Muster gate; want it held until its gang of 4 exists", p.Name)
		}
	}
	create("both-3", "both", both)
	waitBound("both", 4)
	waitFor(t, ctx, "Muster's group both to finish", func(ctx context.Context) (bool, error) {
		pg, err := mc.SchedulingV1alpha1().PodGroups(ns).Get(ctx, "both", metav1.GetOptions{})
		return err == nil && meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionFinished), nil
	})
	pg, err := mc.SchedulingV1alpha1().PodGroups(ns).Get(ctx, "both", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	expectGroupCounts(t, pg, v1alpha1.ReasonSucceeded, 4, 0)
	waitFor(t, ctx, "no pod to be gated or to hold Muster's finalizer", func(ctx context.Context) (bool, error) {
		list, err := kc.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, p := range list.Items {
			if isGated(&p) || scheduling.HasTrackingFinalizer(&p) || p.Spec.NodeName == "" {
				return false, nil
			}
		}
		return true, nil
	})
}

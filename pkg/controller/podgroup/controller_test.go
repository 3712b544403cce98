package podgroup

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	musterfake "github.com/muster-dev/muster/pkg/generated/clientset/versioned/fake"
	musterinformers "github.com/muster-dev/muster/pkg/generated/informers/externalversions"
)

// TestRun runs the controller as muster-apiserver wires it, with informers
// that list and watch the fake clientsets, and drives a gang of 3 from gated
// to Succeeded. It polls for each state instead of sleeping.
func TestRun(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, Labels: map[string]string{corev1.LabelMetadataName: testNS}}}
	stranger := newPod("stranger", func(p *corev1.Pod) { delete(p.Labels, scheduling.PodGroupLabel) })
	kube := kubefake.NewSimpleClientset(withVersions(objects(nil, newPod("p-0"), newPod("p-1"), stranger))...)
	if err := kube.Tracker().Add(ns); err != nil {
		t.Fatal(err)
	}
	if err := kube.Tracker().Add(newNode("n1", "8")); err != nil {
		t.Fatal(err)
	}
	muster := musterfake.NewSimpleClientset(withVersions(objects(newGroup(3)))...)
	keepVersions(&kube.Fake, kube.Tracker())
	keepVersions(&muster.Fake, muster.Tracker())

	// The defaults: capacity-aware admission, fed by a node informer.
	ctx, _ := runController(t, DefaultConfig(), kube, muster)

	getPod := func(name string) *corev1.Pod {
		p, err := kube.CoreV1().Pods(testNS).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	getGroup := func() *v1alpha1.PodGroup {
		pg, err := muster.SchedulingV1alpha1().PodGroups(testNS).Get(ctx, testGroup, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return pg
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return cond(), nil
		})
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}

	waitFor("the short group to say so", func() bool {
		c := cond(getGroup(), v1alpha1.ConditionAdmitted)
		return c != nil && c.Message == "has 2 of the 3 active pods it needs"
	})
	for _, n := range []string{"p-0", "p-1"} {
		if !scheduling.HasGate(getPod(n)) {
			t.Fatalf("%s was ungated before the gang was complete", n)
		}
	}

	if _, err := kube.CoreV1().Pods(testNS).Create(ctx, newPod("p-2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor("the gang to be released, each pod pinned to the node", func() bool {
		for _, n := range []string{"p-0", "p-1", "p-2"} {
			if p := getPod(n); scheduling.HasGate(p) || scheduling.PinnedNode(p) != "n1" {
				return false
			}
		}
		return true
	})
	wantCondition(t, getGroup(), v1alpha1.ConditionAdmitted, metav1.ConditionTrue, scheduling.ReasonGangFits, "")

	for _, n := range []string{"p-0", "p-1", "p-2"} {
		p := getPod(n)
		succeeded(p)
		if _, err := kube.CoreV1().Pods(testNS).Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("the group to finish", func() bool { return isFinished(getGroup()) })
	pg := getGroup()
	wantCounts(t, pg, 3, 0)
	wantUncounted(t, pg, nil, nil)
	wantCondition(t, pg, v1alpha1.ConditionFinished, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "")
	for _, n := range []string{"p-0", "p-1", "p-2"} {
		if scheduling.HasTrackingFinalizer(getPod(n)) {
			t.Errorf("%s keeps its finalizer", n)
		}
	}
	for _, a := range kube.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok && p.GetName() == "stranger" {
			t.Errorf("a pod without the group label was patched: %s", p.GetPatch())
		}
	}
}

// runController builds a controller over kube and muster with informers as
// muster-apiserver wires them (a node informer for capacity-aware
// admission), and runs it with 2 workers. stop ends it, as a lost Lease
// does, and waits for Run to return; the test's cleanup calls it too. ctx
// ends with it.
func runController(t *testing.T, cfg Config, kube *kubefake.Clientset, muster *musterfake.Clientset) (ctx context.Context, stop func()) {
	t.Helper()
	podFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0,
		kubeinformers.WithTweakListOptions(PodListOptions), kubeinformers.WithTransform(TransformPod))
	nsFactory := kubeinformers.NewSharedInformerFactory(kube, 0)
	musterFactory := musterinformers.NewSharedInformerFactory(muster, 0)
	ownerFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithTransform(TransformOwner))
	inf := Informers{
		Pods:         podFactory.Core().V1().Pods(),
		Namespaces:   nsFactory.Core().V1().Namespaces(),
		PodGroups:    musterFactory.Scheduling().V1alpha1().PodGroups(),
		Jobs:         ownerFactory.Batch().V1().Jobs(),
		StatefulSets: ownerFactory.Apps().V1().StatefulSets(),
	}
	if cfg.Admission == AdmissionCapacity {
		inf.Nodes = nsFactory.Core().V1().Nodes()
	}
	c, err := New(cfg, kube, muster, inf, record.NewFakeRecorder(1000))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	factories := []interface {
		Start(<-chan struct{})
		Shutdown()
	}{podFactory, ownerFactory, nsFactory, musterFactory}
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 2) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
			for _, f := range factories {
				f.Shutdown()
			}
		})
	}
	t.Cleanup(stop)
	return ctx, stop
}

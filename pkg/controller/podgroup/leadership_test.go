package podgroup

import (
	"context"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kubeinformers "k8s.io/client-go/informers"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/legacyregistry"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	musterfake "github.com/muster-dev/muster/pkg/generated/clientset/versioned/fake"
	musterinformers "github.com/muster-dev/muster/pkg/generated/informers/externalversions"
)

// TestLeadershipTerms runs two controllers one after the other in one
// process, as muster-apiserver does when its replica loses the Lease and
// wins it back: each term's controller serves its metrics from the
// process's registry only while it runs. The second term starts without a
// duplicate registration, and its gauges are its own, not the sum of both
// terms; between the terms no gauge is served at all.
func TestLeadershipTerms(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, Labels: map[string]string{corev1.LabelMetadataName: testNS}}}
	terms := []struct {
		name  string
		pods  []*corev1.Pod
		gated float64
	}{
		{name: "first term", pods: []*corev1.Pod{newPod("p-0")}, gated: 1},
		{name: "second term, after the Lease was lost and won back", pods: []*corev1.Pod{newPod("p-0"), newPod("p-1"), newPod("p-2")}, gated: 3},
	}
	for _, term := range terms {
		// A gang of 4 that is not complete: its pods stay gated. The
		// API server gives a new group its Pending phase.
		pg := newGroup(4)
		pg.Status.Phase = v1alpha1.PodGroupPending
		stop := runTerm(t, append(objects(pg, term.pods...), ns))
		pollMetrics(t, term.name+": the gated-pods gauge to count this term's pods", func(fams map[string]*dto.MetricFamily) bool {
			return gaugeValue(fams, "muster_gated_pods", "phase", "Pending") == term.gated
		})
		if fams := gather(t); fams["muster_podgroups_waiting_for_capacity"] == nil {
			t.Errorf("%s: muster_podgroups_waiting_for_capacity is not served while the controller leads", term.name)
		}
		stop()
		fams := gather(t)
		for _, m := range newControllerMetrics().all() {
			if fams[m.FQName()] != nil {
				t.Errorf("%s: %s is still served after the controller stopped leading", term.name, m.FQName())
			}
		}
	}
}

// runTerm builds and runs a controller over objs, with count admission,
// as the leader's run does; stop ends its term and waits for Run to return.
func runTerm(t *testing.T, objs []runtime.Object) (stop func()) {
	t.Helper()
	var kubeObjs, musterObjs []runtime.Object
	for _, o := range withVersions(objs) {
		if _, ok := o.(*corev1.Pod); ok {
			kubeObjs = append(kubeObjs, o)
			continue
		}
		if _, ok := o.(*corev1.Namespace); ok {
			kubeObjs = append(kubeObjs, o)
			continue
		}
		musterObjs = append(musterObjs, o)
	}
	kube := kubefake.NewSimpleClientset(kubeObjs...)
	muster := musterfake.NewSimpleClientset(musterObjs...)
	keepVersions(&kube.Fake, kube.Tracker())
	keepVersions(&muster.Fake, muster.Tracker())
	kubeFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0,
		kubeinformers.WithTweakListOptions(PodListOptions), kubeinformers.WithTransform(TransformPod))
	nsFactory := kubeinformers.NewSharedInformerFactory(kube, 0)
	ownerFactory := kubeinformers.NewSharedInformerFactoryWithOptions(kube, 0, kubeinformers.WithTransform(TransformOwner))
	musterFactory := musterinformers.NewSharedInformerFactory(muster, 0)
	cfg := DefaultConfig()
	cfg.Admission = AdmissionCount
	c, err := New(cfg, kube, muster, Informers{
		Pods:         kubeFactory.Core().V1().Pods(),
		Namespaces:   nsFactory.Core().V1().Namespaces(),
		PodGroups:    musterFactory.Scheduling().V1alpha1().PodGroups(),
		Jobs:         ownerFactory.Batch().V1().Jobs(),
		StatefulSets: ownerFactory.Apps().V1().StatefulSets(),
	}, record.NewFakeRecorder(1000))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	for _, f := range []interface{ Start(<-chan struct{}) }{kubeFactory, nsFactory, ownerFactory, musterFactory} {
		f.Start(ctx.Done())
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		kubeFactory.Shutdown()
		nsFactory.Shutdown()
		ownerFactory.Shutdown()
		musterFactory.Shutdown()
	}
	t.Cleanup(stop)
	return stop
}

// gather reads the process's registry, which muster-apiserver serves on
// /metrics, by family name.
func gather(t *testing.T) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatalf("gathering metrics: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

// pollMetrics waits, with a deadline, until cond holds of the registry.
func pollMetrics(t *testing.T, what string, cond func(map[string]*dto.MetricFamily) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return cond(gather(t)), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// gaugeValue is the value of the gauge series with the given label, or -1
// when it is not served.
func gaugeValue(fams map[string]*dto.MetricFamily, name, label, value string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == label && l.GetValue() == value {
				return m.GetGauge().GetValue()
			}
		}
	}
	return -1
}

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// newGangStatefulSet returns a StatefulSet of replicas pods that form the
// gang name (created by Muster from the min-count annotation).
func newGangStatefulSet(ns, name string, replicas int32, policy appsv1.PodManagementPolicyType) *appsv1.StatefulSet {
	labels := map[string]string{"app": name, scheduling.PodGroupLabel: name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            ptr.To(replicas),
			ServiceName:         name,
			PodManagementPolicy: policy,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      labels,
					Annotations: map[string]string{scheduling.MinCountAnnotation: fmt.Sprint(replicas)},
				},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: ptr.To[int64](1),
					Containers: []corev1.Container{{
						Name: "main", Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
					}},
				},
			},
		},
	}
}

// warningRecorder keeps the warnings kube-apiserver sends back.
type warningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

func (w *warningRecorder) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.warnings = append(w.warnings, text)
}

func (w *warningRecorder) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.warnings, "\n")
}

// TestStatefulSetParallelGang: a StatefulSet with podManagementPolicy
// Parallel creates all its pods at once; they form one gang, released
// together once all exist, and no warning is given.
func TestStatefulSetParallelGang(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	warnings, client := warningClient(t)
	if _, err := client.AppsV1().StatefulSets(ns).Create(ctx, newGangStatefulSet(ns, "db", 4, appsv1.ParallelPodManagement), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StatefulSet: %v", err)
	}
	if w := warnings.all(); w != "" {
		t.Errorf("creating a Parallel StatefulSet warned: %s", w)
	}
	stop := make(chan struct{})
	monitor := make(chan error, 1)
	go func() { monitor <- watchGangsWhole(ctx, ns, stop, 4, 4) }()
	waitFor(t, ctx, "the StatefulSet's 4 pods to be Ready", func(ctx context.Context) (bool, error) {
		sts, err := kube.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		return err == nil && sts.Status.ReadyReplicas == 4, nil
	})
	close(stop)
	if err := <-monitor; err != nil {
		t.Error(err)
	}
	pg, err := getGroup(ctx, ns, "db")
	if err != nil {
		t.Fatal(err)
	}
	if !meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionScheduled) || pg.Status.Scheduled != 4 {
		t.Errorf("group db: scheduled %d, conditions %+v; want the gang of 4 Scheduled", pg.Status.Scheduled, pg.Status.Conditions)
	}
}

// TestStatefulSetOrderedReadyIsExplained: with podManagementPolicy
// OrderedReady (the default) the StatefulSet controller creates pod N+1
// only once pod N is Ready, so a gang of 3 can never form. Muster says so
// at once: a warning when the StatefulSet is created, and a condition and
// a Warning event on the group, rather than holding pod 0 without a word.
func TestStatefulSetOrderedReadyIsExplained(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	warnings, client := warningClient(t)
	if _, err := client.AppsV1().StatefulSets(ns).Create(ctx, newGangStatefulSet(ns, "ordered", 3, ""), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating StatefulSet: %v", err)
	}
	if w := warnings.all(); !strings.Contains(w, "podManagementPolicy") || !strings.Contains(w, "Parallel") {
		t.Errorf("creating an OrderedReady gang StatefulSet warned %q; want a warning that names podManagementPolicy and Parallel", w)
	}
	var cond *metav1.Condition
	waitFor(t, ctx, "the group to say why it can never be admitted", func(ctx context.Context) (bool, error) {
		pg, err := getGroup(ctx, ns, "ordered")
		if err != nil {
			return false, nil
		}
		cond = meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted)
		return cond != nil && cond.Status == metav1.ConditionFalse && cond.Reason == "OrderedReadyStatefulSet", nil
	})
	if !strings.Contains(cond.Message, "ordered") || !strings.Contains(cond.Message, "Parallel") {
		t.Errorf("Admitted message %q should name the StatefulSet and the fix", cond.Message)
	}
	waitFor(t, ctx, "a Warning event on the group", func(ctx context.Context) (bool, error) {
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("involvedObject.name", "ordered").String()})
		if err != nil {
			return false, nil
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && e.Reason == "OrderedReadyStatefulSet" {
				return true, nil
			}
		}
		return false, nil
	})
	// Only pod 0 exists, and it stays gated: nothing runs short.
	for _, p := range listPods(t, ctx, ns) {
		if p.Name != "ordered-0" || !isGated(&p) {
			t.Errorf("pod %s gated=%t; want only ordered-0, gated", p.Name, isGated(&p))
		}
	}
}

// warningClient returns a clientset whose warnings are recorded.
func warningClient(t *testing.T) (*warningRecorder, kubernetes.Interface) {
	t.Helper()
	w := &warningRecorder{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	return w, kubernetes.NewForConfigOrDie(cfg)
}

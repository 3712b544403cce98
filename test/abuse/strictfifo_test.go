package abuse

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	"github.com/muster-dev/muster/test/cluster"
)

// TestAbuseStrictFIFOHead (issue 34, path 7): under StrictFIFO nothing is
// admitted behind the head of the queue until the head fits. mallory, who
// may only create pods, puts a gang at the head whose pods each require a
// pod on their node that carries a label nobody has: it fits no node now
// and never will. Muster must judge it on the idle cluster, skip it, say
// so on its group, and admit the well-behaved tenant's gang behind it.
// StrictFIFO is not the default, so this runs on a cluster of its own.
func TestAbuseStrictFIFOHead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ownCluster(t, []string{"--queueing-strategy=StrictFIFO"})
	bad := podsTenant(t, ctx, "mallory", 100)
	good := tenant{ns: newNamespace(t, ctx, "tenant"), client: kube}

	var head []*corev1.Pod
	for i := range 2 {
		p := malloryPod(bad.ns, fmt.Sprintf("unreachable-%d", i), "unreachable", map[string]string{scheduling.MinCountAnnotation: "2"})
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: perNode("abuse.muster.dev/nobody", []string{"nobody"}),
		}}
		head = append(head, p)
	}
	if accepted, _, first := createAll(ctx, bad, head); accepted != len(head) {
		t.Fatalf("mallory's gang: %d of %d pods created: %v", accepted, len(head), first)
	}
	skipped, err := waitAdmittedReason(ctx, time.Minute, bad.ns, "unreachable", metav1.ConditionFalse, scheduling.ReasonExceedsClusterCapacity)
	if err != nil {
		t.Fatalf("mallory's gang at the head was never judged unable to fit: %v", err)
	}
	if !strings.Contains(skipped.Message, "can never fit") {
		t.Errorf("mallory's group says %q, want it to say that it can never fit", skipped.Message)
	}

	admitted := admitBehind(t, ctx, good, 3, time.Minute, nil)
	if c := admittedOf(t, ctx, bad.ns, "unreachable"); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("mallory's gang, which can never fit, is %v", c)
	}
	t.Logf("mallory's head said %q; the gang behind it was admitted %v after its pods were created",
		skipped.Message, admitted.Round(time.Millisecond))
}

// admitBehind creates a well-behaved gang of n pods named behind-<i>, each
// changed by mod, behind what mallory put in the queue, waits up to
// timeout until it is admitted, and returns how long that took from the
// creation of its pods.
func admitBehind(t *testing.T, ctx context.Context, good tenant, n int, timeout time.Duration, mod func(*corev1.Pod)) time.Duration {
	t.Helper()
	began := time.Now()
	var gang []*corev1.Pod
	for i := range n {
		p := malloryPod(good.ns, fmt.Sprintf("behind-%d", i), "behind", map[string]string{scheduling.MinCountAnnotation: fmt.Sprint(n)})
		if mod != nil {
			mod(p)
		}
		gang = append(gang, p)
	}
	if accepted, _, first := createAll(ctx, good, gang); accepted != len(gang) {
		t.Fatalf("the well-behaved gang: %d of %d pods created: %v", accepted, len(gang), first)
	}
	if _, err := waitAdmittedReason(ctx, timeout, good.ns, "behind", metav1.ConditionTrue, scheduling.ReasonGangFits); err != nil {
		t.Fatalf("the well-behaved gang behind mallory's was never admitted: %v", err)
	}
	return time.Since(began)
}

// admittedOf is a group's Admitted condition, nil when it has none.
func admittedOf(t *testing.T, ctx context.Context, ns, name string) *metav1.Condition {
	t.Helper()
	pg, err := muster.SchedulingV1alpha1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted)
}

// ownCluster starts a cluster of the test's own, with Muster's default
// install (the webhook anonymous, as in the suite's cluster) and args
// after the suite's, mods changing its options, and points the suite's
// clients at it until the test ends. The suite's tests run one at a time.
func ownCluster(t *testing.T, args []string, mods ...func(*cluster.Options)) {
	t.Helper()
	bin, err := cluster.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	opts := cluster.Options{
		BinDir:           bin,
		MusterBinary:     cluster.DefaultMusterBinary(bin),
		MusterManifests:  cluster.DefaultMusterManifests(),
		MusterArgs:       slices.Concat(musterArgs, args),
		AnonymousWebhook: true,
	}
	for _, mod := range mods {
		mod(&opts)
	}
	c := cluster.StartForTest(t, opts)
	savedEnv, savedKube, savedMuster := env, kube, muster
	cfg := rest.CopyConfig(c.Config)
	cfg.QPS, cfg.Burst = 200, 400
	env, kube, muster = c, kubernetes.NewForConfigOrDie(cfg), versioned.NewForConfigOrDie(cfg)
	t.Cleanup(func() { env, kube, muster = savedEnv, savedKube, savedMuster })
}

// podsTenant is a namespace where malloryUser may create pods and nothing
// else, under a quota of pods pods, without mallory's other quotas.
func podsTenant(t *testing.T, ctx context.Context, prefix string, pods int64) tenant {
	t.Helper()
	ns := newNamespace(t, ctx, prefix)
	podsOnly(t, ctx, ns, corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)})
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: malloryUser}
	return tenant{ns: ns, client: kubernetes.NewForConfigOrDie(cfg)}
}

// waitAdmittedReason waits up to timeout until the group's Admitted
// condition has status and reason, and returns the condition.
func waitAdmittedReason(ctx context.Context, timeout time.Duration, ns, name string, status metav1.ConditionStatus, reason string) (*metav1.Condition, error) {
	var last string
	var found *metav1.Condition
	err := waitUntil(ctx, timeout, func(ctx context.Context) (bool, error) {
		pg, err := muster.SchedulingV1alpha1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			if ctx.Err() == nil {
				last = err.Error()
			}
			return false, nil
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted)
		if c == nil {
			last = "no Admitted condition"
			return false, nil
		}
		last = fmt.Sprintf("Admitted=%s, %s: %s", c.Status, c.Reason, c.Message)
		found = c
		return c.Status == status && c.Reason == reason, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w; last: %s", err, last)
	}
	return found, nil
}

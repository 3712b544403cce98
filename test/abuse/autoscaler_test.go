package abuse

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/test/cluster"
)

// nowhere is a node label no node has and no NodePool offers: Karpenter
// can launch no node for a pod that selects it.
const nowhere = "abuse.muster.dev/nowhere"

// TestAbuseAutoscalerOversizedGang (issue 34, path 3): mallory, who may
// only create pods, creates one driver pod whose roles template asks for
// 300 workers created later, all selecting a node label that no node and
// no NodePool has. The gang, 301 pods, is larger than
// --capacity-request-max-pods (256): it asks the autoscaler alone, for
// room that never comes, and its request stands for
// --capacity-request-timeout (10 minutes). A well-behaved tenant's gang
// behind it in the queue, which Karpenter can serve, must ask beside it
// and run, not wait out mallory's request. Karpenter is cluster-wide, so
// this runs on a cluster of its own, with Muster as the chart installs
// it (--autoscaling=auto finds Karpenter's NodePools).
func TestAbuseAutoscalerOversizedGang(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ownCluster(t, nil, func(o *cluster.Options) { o.Karpenter = true })
	const pool = "abuse"
	if err := env.CreateKarpenterPool(ctx, pool, []string{"cpu-4", "cpu-16"}, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}); err != nil {
		t.Fatal(err)
	}
	// The quota holds the gang and its 301 capacity-request pods: a
	// tenant with room for a large gang.
	bad := podsTenant(t, ctx, "mallory", 700)
	good := tenant{ns: newNamespace(t, ctx, "tenant"), client: kube}

	const workers = 300
	driver, err := unreachableDriver(bad.ns, "oversized", workers)
	if err != nil {
		t.Fatal(err)
	}
	if err := create(ctx, bad, driver); err != nil {
		t.Fatalf("mallory's driver: %v", err)
	}
	asking, err := waitAdmittedReason(ctx, time.Minute, bad.ns, "oversized", metav1.ConditionFalse, scheduling.ReasonWaitingForNodes)
	if err != nil {
		t.Fatalf("mallory's gang never asked the autoscaler: %v", err)
	}
	if want := fmt.Sprintf("room for %d pods", workers+1); !strings.Contains(asking.Message, want) {
		t.Fatalf("mallory's group says %q, want it to ask for %s", asking.Message, want)
	}

	admitted := admitBehind(t, ctx, good, 4, 2*time.Minute, func(p *corev1.Pod) {
		p.Spec.NodeSelector = map[string]string{"karpenter.sh/nodepool": pool}
	})

	// mallory's request still stands: the gang behind it did not wait for
	// it to end.
	if c := admittedOf(t, ctx, bad.ns, "oversized"); c == nil || c.Reason != scheduling.ReasonWaitingForNodes {
		t.Errorf("mallory's gang no longer asks (%v): the test did not show the two asking at once", c)
	}
	pods, err := kube.CoreV1().Pods(good.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			continue
		}
		node, err := kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil || node.Labels["karpenter.sh/nodepool"] != pool {
			t.Errorf("pod %s runs on %s, not on a node Karpenter launched for NodePool %s (%v)", p.Name, p.Spec.NodeName, pool, err)
		}
	}
	t.Logf("mallory's gang of %d said %q; the gang behind it, in another namespace, was admitted on Karpenter's nodes %v after its pods were created",
		workers+1, asking.Message, admitted.Round(time.Millisecond))
}

// unreachableDriver is a driver pod whose roles template asks for workers
// created later; it and its workers select the label nowhere.
func unreachableDriver(ns, group string, workers int64) (*corev1.Pod, error) {
	tmpl, err := json.Marshal([]any{map[string]any{
		"name":  "worker",
		"count": workers,
		"template": map[string]any{
			"requests":     map[string]string{"cpu": "1"},
			"nodeSelector": map[string]string{nowhere: "true"},
		},
	}})
	if err != nil {
		return nil, err
	}
	p := malloryPod(ns, group+"-driver", group, map[string]string{scheduling.RolesTemplateAnnotation: string(tmpl)})
	p.Labels[scheduling.RoleLabel] = "driver"
	p.Spec.NodeSelector = map[string]string{nowhere: "true"}
	return p, nil
}

package e2e

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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	"github.com/muster-dev/muster/test/cluster"
)

// provReqEnv is a cluster of its own that serves the ProvisioningRequest
// API, so that Muster's default --autoscaling=auto asks with
// ProvisioningRequests; no cluster-autoscaler runs, and the test sets the
// conditions it would.
type provReqEnv struct {
	c      *cluster.Cluster
	kube   kubernetes.Interface
	muster versioned.Interface
	dyn    dynamic.Interface
}

// TestProvisioningRequest: a gang of 4 pods, each larger than any node,
// gets one ProvisioningRequest of the atomic class and waits for nodes,
// gated. Provisioned, and with nodes that fit, it is released whole, each
// pod pinned, and runs, and the request goes. A request that Failed is
// withdrawn, and the group says why.
func TestProvisioningRequest(t *testing.T) {
	c := clusterOfItsOwn(t, func(o *cluster.Options) {
		o.Nodes = 1
		o.ProvisioningRequestCRD = true
	})
	e := &provReqEnv{
		c:      c,
		kube:   kubernetes.NewForConfigOrDie(c.Config),
		muster: versioned.NewForConfigOrDie(c.Config),
		dyn:    dynamic.NewForConfigOrDie(c.Config),
	}

	t.Run("provisioned", func(t *testing.T) {
		ctx := testContext(t, 3*time.Minute)
		ns := c.NewNamespace(t, ctx, "provreq-provisioned")
		// 40 CPUs a pod: the one node has 32.
		e.createGang(t, ctx, ns, "train", 4, "40")
		pr := e.waitRequest(t, ctx, ns, "train")
		e.expectRequest(t, ctx, pr, "train", 4, "40")
		e.waitReason(t, ctx, ns, "train", scheduling.ReasonWaitingForNodes, "(ProvisioningRequest)")
		// Once the informer shows it, the message names the request.
		e.waitReason(t, ctx, ns, "train", scheduling.ReasonWaitingForNodes, "with ProvisioningRequest "+ns+"/"+pr.GetName()+": 0 of 4 have room")
		e.expectGated(t, ctx, ns, "train")

		// Provisioned before the nodes are up: the group is told, and still
		// waits for room it can place the gang in.
		e.setCondition(t, ctx, ns, pr.GetName(), "Provisioned", "Provisioned", "capacity is available")
		e.waitEvent(t, ctx, ns, "train", scheduling.EventCapacityProvisioned, "ProvisioningRequest "+ns+"/"+pr.GetName())
		e.waitReason(t, ctx, ns, "train", scheduling.ReasonWaitingForNodes, "with ProvisioningRequest "+ns+"/"+pr.GetName()+": 4 of 4 have room")
		e.expectGated(t, ctx, ns, "train")

		added, err := c.AddNodes(ctx, cluster.NodeSpec{Prefix: "provisioned", Count: 4, CPU: "48", Memory: "64Gi"})
		if err != nil {
			t.Fatalf("adding nodes: %v", err)
		}
		pods := e.waitRunning(t, ctx, ns, "train", 4)
		for _, p := range pods {
			if pin := scheduling.PinnedNode(&p); pin == "" || pin != p.Spec.NodeName || !slices.Contains(added, pin) {
				t.Errorf("pod %s runs on %s, pinned to %q; want pinned to the added node it runs on", p.Name, p.Spec.NodeName, pin)
			}
		}
		e.waitRequestGone(t, ctx, ns, "train")
	})

	t.Run("failed", func(t *testing.T) {
		ctx := testContext(t, 3*time.Minute)
		ns := c.NewNamespace(t, ctx, "provreq-failed")
		// 60 CPUs a pod: more than any node, the added ones too.
		e.createGang(t, ctx, ns, "big", 4, "60")
		pr := e.waitRequest(t, ctx, ns, "big")
		e.expectRequest(t, ctx, pr, "big", 4, "60")
		e.waitReason(t, ctx, ns, "big", scheduling.ReasonWaitingForNodes, "(ProvisioningRequest)")

		const why = "no node group can fit the pods"
		e.setCondition(t, ctx, ns, pr.GetName(), "Failed", "NotProvisioned", why)
		e.waitReason(t, ctx, ns, "big", scheduling.ReasonNodesNotProvisioned, why)
		e.waitRequestGone(t, ctx, ns, "big")
		e.expectGated(t, ctx, ns, "big")
	})
}

// createGang creates a gang PodGroup of n pods, each asking for cpu.
func (e *provReqEnv) createGang(t *testing.T, ctx context.Context, ns, group string, n int32, cpu string) {
	t.Helper()
	if _, err := e.muster.SchedulingV1alpha1().PodGroups(ns).Create(ctx, newGroupObject(ns, group, n), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating PodGroup %s: %v", group, err)
	}
	for i := range n {
		p := newPod(ns, fmt.Sprintf("%s-%d", group, i), podOpts{group: group})
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
		if _, err := e.kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating pod %s: %v", p.Name, err)
		}
	}
}

// requests are the ProvisioningRequests Muster made for group.
func (e *provReqEnv) requests(ctx context.Context, ns, group string) ([]unstructured.Unstructured, error) {
	list, err := e.dyn.Resource(cluster.ProvisioningRequestResource).Namespace(ns).List(ctx,
		metav1.ListOptions{LabelSelector: scheduling.CapacityRequestLabel + "=" + group})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// waitRequest waits for the group's ProvisioningRequest and returns it.
func (e *provReqEnv) waitRequest(t *testing.T, ctx context.Context, ns, group string) *unstructured.Unstructured {
	t.Helper()
	var got []unstructured.Unstructured
	waitFor(t, ctx, "a ProvisioningRequest for "+group, func(ctx context.Context) (bool, error) {
		var err error
		got, err = e.requests(ctx, ns, group)
		return err == nil && len(got) > 0, nil
	})
	if len(got) != 1 {
		t.Fatalf("group %s has %d ProvisioningRequests, want 1", group, len(got))
	}
	return &got[0]
}

// expectRequest checks that pr is of the atomic class, owned by the group,
// with one pod set of n pods whose PodTemplate asks for cpu.
func (e *provReqEnv) expectRequest(t *testing.T, ctx context.Context, pr *unstructured.Unstructured, group string, n int64, cpu string) {
	t.Helper()
	ns := pr.GetNamespace()
	pg, err := e.muster.SchedulingV1alpha1().PodGroups(ns).Get(ctx, group, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owners := pr.GetOwnerReferences()
	if len(owners) != 1 || owners[0].UID != pg.UID || owners[0].Kind != "PodGroup" {
		t.Errorf("ProvisioningRequest owners %v, want the PodGroup %s", owners, pg.UID)
	}
	if class, _, _ := unstructured.NestedString(pr.Object, "spec", "provisioningClassName"); class != scheduling.ProvisioningRequestClass {
		t.Errorf("class %q, want %q", class, scheduling.ProvisioningRequestClass)
	}
	sets, _, _ := unstructured.NestedSlice(pr.Object, "spec", "podSets")
	if len(sets) != 1 {
		t.Fatalf("pod sets %v, want one: the gang's pods are alike", sets)
	}
	set := sets[0].(map[string]interface{})
	count, _, _ := unstructured.NestedInt64(set, "count")
	name, _, _ := unstructured.NestedString(set, "podTemplateRef", "name")
	if count != n {
		t.Errorf("pod set count %d, want %d", count, n)
	}
	tmpl, err := e.kube.CoreV1().PodTemplates(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("PodTemplate %s of the request: %v", name, err)
	}
	if tmpl.Labels[scheduling.CapacityRequestLabel] != group || len(tmpl.OwnerReferences) != 1 || tmpl.OwnerReferences[0].UID != pg.UID {
		t.Errorf("PodTemplate %s labels %v owners %v, want the group's label and owner", name, tmpl.Labels, tmpl.OwnerReferences)
	}
	want := resource.MustParse(cpu)
	if got := tmpl.Template.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU]; got.Cmp(want) != 0 {
		t.Errorf("PodTemplate %s asks for %s CPU, want %s", name, got.String(), cpu)
	}
}

// setCondition sets a condition True on a ProvisioningRequest, as
// cluster-autoscaler would.
func (e *provReqEnv) setCondition(t *testing.T, ctx context.Context, ns, name, typ, reason, message string) {
	t.Helper()
	cond := metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: message}
	if err := cluster.SetProvisioningRequestCondition(ctx, e.dyn, ns, name, cond); err != nil {
		t.Fatalf("setting %s=True on ProvisioningRequest %s: %v", typ, name, err)
	}
}

// waitReason waits until the group's Admitted condition is False with
// reason, and a message that holds text.
func (e *provReqEnv) waitReason(t *testing.T, ctx context.Context, ns, group, reason, text string) {
	t.Helper()
	var last *metav1.Condition
	err := waitCond(ctx, func(ctx context.Context) bool {
		pg, err := e.muster.SchedulingV1alpha1().PodGroups(ns).Get(ctx, group, metav1.GetOptions{})
		if err != nil {
			return false
		}
		last = meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted)
		return last != nil && last.Status == metav1.ConditionFalse && last.Reason == reason && strings.Contains(last.Message, text)
	})
	if err != nil {
		t.Fatalf("waiting for group %s Admitted=False/%s saying %q: %v; last %+v; %s", group, reason, text, err, last, e.describe(ns))
	}
}

// waitEvent waits for an event of reason on the group whose message holds
// text.
func (e *provReqEnv) waitEvent(t *testing.T, ctx context.Context, ns, group, reason, text string) {
	t.Helper()
	err := waitCond(ctx, func(ctx context.Context) bool {
		events, err := e.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, ev := range events.Items {
			if ev.InvolvedObject.Name == group && ev.Reason == reason && strings.Contains(ev.Message, text) {
				return true
			}
		}
		return false
	})
	if err != nil {
		t.Fatalf("waiting for a %s event on group %s saying %q: %v; %s", reason, group, text, err, e.describe(ns))
	}
}

// expectGated checks that no pod of the group has been released.
func (e *provReqEnv) expectGated(t *testing.T, ctx context.Context, ns, group string) {
	t.Helper()
	for _, p := range e.groupPods(t, ctx, ns, group) {
		if !scheduling.HasGate(&p) || p.Spec.NodeName != "" {
			t.Errorf("pod %s was released (node %q) while its gang waits for nodes", p.Name, p.Spec.NodeName)
		}
	}
}

func (e *provReqEnv) groupPods(t *testing.T, ctx context.Context, ns, group string) []corev1.Pod {
	t.Helper()
	list, err := e.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: scheduling.PodGroupLabel + "=" + group})
	if err != nil {
		t.Fatalf("listing pods of %s: %v", group, err)
	}
	return list.Items
}

// waitRunning waits until all n pods of the group are bound and run.
func (e *provReqEnv) waitRunning(t *testing.T, ctx context.Context, ns, group string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := waitCond(ctx, func(ctx context.Context) bool {
		pods = e.groupPods(t, ctx, ns, group)
		running := 0
		for _, p := range pods {
			if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return len(pods) == n && running == n
	})
	if err != nil {
		t.Fatalf("waiting for the %d pods of %s to run: %v; pods %s", n, group, err, podStates(pods))
	}
	return pods
}

// waitRequestGone waits until the group's ProvisioningRequest and its
// PodTemplates are deleted.
func (e *provReqEnv) waitRequestGone(t *testing.T, ctx context.Context, ns, group string) {
	t.Helper()
	selector := metav1.ListOptions{LabelSelector: scheduling.CapacityRequestLabel + "=" + group}
	err := waitCond(ctx, func(ctx context.Context) bool {
		prs, err := e.requests(ctx, ns, group)
		if err != nil || len(prs) > 0 {
			return false
		}
		tmpls, err := e.kube.CoreV1().PodTemplates(ns).List(ctx, selector)
		return err == nil && len(tmpls.Items) == 0
	})
	if err != nil {
		t.Fatalf("waiting for the ProvisioningRequest of %s and its PodTemplates to be deleted: %v", group, err)
	}
}

// waitCond polls cond until it holds or ctx ends.
func waitCond(ctx context.Context, cond func(context.Context) bool) error {
	return wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) { return cond(ctx), nil })
}

// describe lists the namespace's ProvisioningRequests and events, for
// failures.
func (e *provReqEnv) describe(ns string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []string
	if prs, err := e.dyn.Resource(cluster.ProvisioningRequestResource).Namespace(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, pr := range prs.Items {
			conds, _, _ := unstructured.NestedSlice(pr.Object, "status", "conditions")
			out = append(out, fmt.Sprintf("ProvisioningRequest %s (created %s, deleting %v): %v", pr.GetName(), pr.GetCreationTimestamp(), pr.GetDeletionTimestamp() != nil, conds))
		}
	}
	if events, err := e.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, ev := range events.Items {
			out = append(out, fmt.Sprintf("event %s %s/%s x%d: %s", ev.Reason, ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Count, ev.Message))
		}
	}
	return strings.Join(out, "\n")
}

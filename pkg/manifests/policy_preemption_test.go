package manifests

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/podtest"
)

// running is a pod that runs on a node, as a victim of preemption does.
func running(mods ...func(*corev1.Pod)) *corev1.Pod {
	at := metav1.Date(2026, 11, 24, 12, 0, 0, 0, metav1.Now().Location())
	p := podtest.Pod(podtest.OnNode("node-0"), podtest.WithFinalizers(scheduling.TrackingFinalizer))
	p.Status = corev1.PodStatus{
		Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: at},
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: at},
		},
		HostIP:    "10.0.0.1",
		PodIP:     "10.1.0.7",
		StartTime: &at,
		QOSClass:  corev1.PodQOSBestEffort,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "c", Image: "busybox", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}}}},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

// disruption is a DisruptionTarget condition with reason.
func disruption(status corev1.ConditionStatus, reason string) corev1.PodCondition {
	return corev1.PodCondition{Type: corev1.DisruptionTarget, Status: status, Reason: reason,
		Message: "evicted for a gang of higher priority", LastTransitionTime: metav1.Date(2026, 11, 24, 13, 0, 0, 0, metav1.Now().Location())}
}

// marked is Muster's mark of a victim.
var marked = disruption(corev1.ConditionTrue, scheduling.ReasonPreemptionByMuster)

// withCondition adds c to the pod's conditions, or replaces the condition of
// its type.
func withCondition(c corev1.PodCondition) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		i := slices.IndexFunc(p.Status.Conditions, func(o corev1.PodCondition) bool { return o.Type == c.Type })
		if i < 0 {
			p.Status.Conditions = append(p.Status.Conditions, c)
		} else {
			p.Status.Conditions[i] = c
		}
	}
}

// withoutCondition removes the condition of type ct.
func withoutCondition(ct corev1.PodConditionType) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = slices.DeleteFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == ct })
	}
}

func withStatus(change func(*corev1.PodStatus)) func(*corev1.Pod) {
	return func(p *corev1.Pod) { change(&p.Status) }
}

// TestWritesPolicyPreemption: Muster's controller may preempt a pod,
// labelled or not, only by adding DisruptionTarget/PreemptionByMuster
// through pods/status and then deleting the pod; any other status write,
// and the delete of a pod without the mark, is denied naming the field,
// but for a capacity-request pod, which it deletes unmarked. The
// confinement of its other updates holds as before.
func TestWritesPolicyPreemption(t *testing.T) {
	managed := podtest.InGroup("g")
	unmanaged := podtest.Label("app", "web")
	status := func(old *corev1.Pod, mods ...func(*corev1.Pod)) policyRequest {
		object := old.DeepCopy()
		for _, m := range mods {
			m(object)
		}
		return policyRequest{op: admission.Update, subResource: "status", object: object, oldObject: old, user: musterAccount}
	}
	update := func(old *corev1.Pod, mods ...func(*corev1.Pod)) policyRequest {
		r := status(old, mods...)
		r.subResource = ""
		return r
	}
	del := func(old *corev1.Pod) policyRequest {
		return policyRequest{op: admission.Delete, oldObject: old, user: musterAccount}
	}
	conditions, dt := "status.conditions", corev1.DisruptionTarget

	tests := []struct {
		name string
		req  policyRequest
		// denied are the fields the denials name; none when allowed.
		denied []string
	}{
		{"marking a pod it manages is allowed", status(running(managed), withCondition(marked)), nil},
		{"marking a pod it does not manage is allowed", status(running(unmanaged), withCondition(marked)), nil},
		{"marking a pod without conditions is allowed", status(running(withStatus(func(s *corev1.PodStatus) { s.Conditions = nil })), withCondition(marked)), nil},
		{"turning the scheduler's DisruptionTarget into its own is allowed",
			status(running(managed, withCondition(disruption(corev1.ConditionTrue, "PreemptionByScheduler"))), withCondition(marked)), nil},
		{"marking a pod marked already is allowed", status(running(managed, withCondition(marked)), withCondition(marked)), nil},
		{"a DisruptionTarget that is not True is denied", status(running(managed), withCondition(disruption(corev1.ConditionFalse, scheduling.ReasonPreemptionByMuster))), []string{conditions}},
		{"a DisruptionTarget of another reason is denied", status(running(managed), withCondition(disruption(corev1.ConditionTrue, "PreemptionByScheduler"))), []string{conditions}},
		{"a DisruptionTarget without reason is denied", status(running(unmanaged), withCondition(disruption(corev1.ConditionTrue, ""))), []string{conditions}},
		{"removing a DisruptionTarget is denied", status(running(managed, withCondition(marked)), withoutCondition(dt)), []string{conditions}},
		{"two DisruptionTargets are denied", status(running(managed), withCondition(marked), func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, marked)
		}), []string{conditions}},
		{"adding another condition is denied", status(running(managed), withCondition(marked),
			withCondition(corev1.PodCondition{Type: "example.com/Drained", Status: corev1.ConditionTrue})), []string{conditions}},
		{"changing another condition is denied", status(running(unmanaged), withCondition(marked),
			withCondition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})), []string{conditions}},
		{"removing another condition is denied", status(running(managed), withoutCondition(corev1.PodReady)), []string{conditions}},
		{"changing the phase is denied", status(running(managed), withCondition(marked), withStatus(func(s *corev1.PodStatus) { s.Phase = corev1.PodFailed })),
			[]string{"status.phase"}},
		{"changing the pod IP of a pod it does not manage is denied", status(running(unmanaged), withStatus(func(s *corev1.PodStatus) { s.PodIP = "10.1.0.8" })),
			[]string{"status.podIP"}},
		{"adding a status field is denied", status(running(managed), withCondition(marked), withStatus(func(s *corev1.PodStatus) { s.NominatedNodeName = "node-1" })),
			[]string{"status.nominatedNodeName"}},
		{"removing a status field is denied", status(running(managed), withStatus(func(s *corev1.PodStatus) { s.HostIP = "" })), []string{"status.hostIP"}},
		{"changing a container's status is denied", status(running(managed), withStatus(func(s *corev1.PodStatus) { s.ContainerStatuses[0].Ready = false })),
			[]string{"status.containerStatuses"}},
		{"removing its finalizer through pods/status is denied", status(running(managed), withCondition(marked), podtest.WithFinalizers()), []string{"metadata.finalizers"}},
		{"a label through pods/status is denied", status(running(unmanaged), withCondition(marked), podtest.Label("team", "x")), []string{"metadata.labels"}},

		{"deleting a marked pod it manages is allowed", del(running(managed, withCondition(marked))), nil},
		{"deleting a marked pod it does not manage is allowed", del(running(unmanaged, withCondition(marked))), nil},
		{"deleting an unmarked pod is denied", del(running(managed)), []string{conditions}},
		{"deleting an unmarked pod it does not manage is denied", del(running(unmanaged)), []string{conditions}},
		{"deleting a pod without status is denied", del(podtest.Pod(unmanaged)), []string{conditions}},
		{"deleting a pod the scheduler marked is denied", del(running(managed, withCondition(disruption(corev1.ConditionTrue, "PreemptionByScheduler")))), []string{conditions}},
		{"deleting a pod marked False is denied", del(running(managed, withCondition(disruption(corev1.ConditionFalse, scheduling.ReasonPreemptionByMuster)))), []string{conditions}},
		{"deleting a capacity-request pod unmarked is allowed", del(capacityRequest()), nil},
		{"deleting a running capacity-request pod unmarked is allowed", del(capacityRequest(func(p *corev1.Pod) { p.Status = running().Status })), nil},
		// A tenant's pod that only looks like one (issue 34, item 8).
		{"deleting an unmarked pod that carries only the capacity-request label is denied", del(running(podtest.Label(scheduling.CapacityRequestLabel, "g"))), []string{conditions}},
		{"deleting an unmarked capacity-request pod of another priority class is denied",
			del(capacityRequest(func(p *corev1.Pod) { p.Spec.PriorityClassName = "high" })), []string{conditions}},
		{"deleting an unmarked capacity-request pod that its PodGroup does not control is denied",
			del(capacityRequest(withOwner(func(o *metav1.OwnerReference) { o.Controller = nil }))), []string{conditions}},
		{"deleting an unmarked capacity-request pod owned by another PodGroup than its label names is denied",
			del(capacityRequest(withOwner(func(o *metav1.OwnerReference) { o.Name = "other" }))), []string{conditions}},
		{"deleting an unmarked capacity-request pod owned by something else is denied",
			del(capacityRequest(withOwner(func(o *metav1.OwnerReference) { o.APIVersion, o.Kind = "batch/v1", "Job" }))), []string{conditions}},
		// So it cannot mark a pod for deletion by the label either.
		{"adding the capacity-request label to a pod is denied", update(running(unmanaged), podtest.Label(scheduling.CapacityRequestLabel, "g")), []string{"metadata.labels"}},

		// Its other writes stay confined, with the delete rule beside them.
		{"removing its finalizer through pods is allowed", update(running(unmanaged), podtest.WithFinalizers()), nil},
		{"removing its gate from a pod it manages is allowed", update(podtest.Pod(managed, podtest.WithGates(scheduling.AdmissionGate)), podtest.WithGates()), nil},
		{"a label through pods is denied", update(running(managed), podtest.Label("team", "x")), []string{"metadata.labels"}},
		{"removing its gate from a pod it does not manage is denied", update(podtest.Pod(unmanaged, podtest.WithGates(scheduling.AdmissionGate)), podtest.WithGates()), []string{"spec.schedulingGates"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			matched, denied := evalPolicy(t, WritesPolicy(), tt.req)
			if !matched {
				t.Fatal("the policy does not apply to Muster's request")
			}
			if got := deniedFields(denied); !slices.Equal(got, tt.denied) {
				t.Errorf("denials name %q, want %q:\n%s", got, tt.denied, strings.Join(denied, "\n"))
			}
			for _, d := range denied {
				if !strings.Contains(d, ": Forbidden: "+musterWho+" may only") {
					t.Errorf("denial %q does not say what Muster may do", d)
				}
			}
		})
	}
}

// TestWritesPolicyLeavesOthersAlone: the preemption rules confine Muster
// alone. The kubelet's status writes, and the deletes of an unmarked pod by
// an administrator or by another service account, are not Muster's, and the
// policy does not apply to them.
func TestWritesPolicyLeavesOthersAlone(t *testing.T) {
	kubelet := &user.DefaultInfo{Name: "system:node:node-0", Groups: []string{user.NodesGroup, user.AllAuthenticated}}
	admin := &user.DefaultInfo{Name: "admin", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}}
	jobController := serviceaccount.UserInfo("kube-system", "job-controller", "")
	failed := running(podtest.InGroup("g"), withStatus(func(s *corev1.PodStatus) { s.Phase = corev1.PodFailed }))
	tests := []struct {
		name string
		req  policyRequest
	}{
		{"the kubelet ending a pod", policyRequest{op: admission.Update, subResource: "status", object: failed, oldObject: running(podtest.InGroup("g")), user: kubelet}},
		{"an administrator deleting an unmarked pod", policyRequest{op: admission.Delete, oldObject: running(), user: admin}},
		{"another service account deleting an unmarked pod", policyRequest{op: admission.Delete, oldObject: running(podtest.InGroup("g")), user: jobController}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if matched, denied := evalPolicy(t, WritesPolicy(), tt.req); matched || len(denied) > 0 {
				t.Errorf("the policy applies (denials %q); want it to leave the request alone", denied)
			}
		})
	}
}

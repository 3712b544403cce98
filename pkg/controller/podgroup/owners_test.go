package podgroup

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/diff"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

var (
	jobsGVR         = batchv1.SchemeGroupVersion.WithResource("jobs")
	jobGVK          = batchv1.SchemeGroupVersion.WithKind("Job")
	statefulSetsGVR = appsv1.SchemeGroupVersion.WithResource("statefulsets")
	statefulSetGVK  = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
)

// newJob returns a running Job of testNS.
func newJob(name string, conds ...batchv1.JobConditionType) *batchv1.Job {
	j := &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID("uid-job-" + name)},
	}
	for _, c := range conds {
		j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue})
	}
	return j
}

// newStatefulSet returns a StatefulSet of testNS with the policy given ("" leaves it unset).
func newStatefulSet(name string, policy appsv1.PodManagementPolicyType) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID("uid-sts-" + name)},
		Spec:       appsv1.StatefulSetSpec{PodManagementPolicy: policy},
	}
}

// controlledBy makes the pod's controller the object of kind k, named and
// with the UID that newJob and newStatefulSet give it.
func controlledBy(k ownerKind, name string) podMod {
	uid := "uid-job-" + name
	if k == statefulSetOwner {
		uid = "uid-sts-" + name
	}
	return func(p *corev1.Pod) {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{
			APIVersion: k.apiVersion, Kind: k.kind, Name: name, UID: types.UID(uid),
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		})
	}
}

func ofJob(name string) podMod { return controlledBy(jobOwner, name) }

func ofStatefulSet(name string) podMod { return controlledBy(statefulSetOwner, name) }

// setJob stores a Job in the fake API, as the Job controller would.
func (h *harness) setJob(j *batchv1.Job) {
	h.t.Helper()
	j.ResourceVersion = h.nextRV()
	if err := h.kube.Tracker().Update(jobsGVR, j, j.Namespace); err != nil {
		h.t.Fatalf("updating job %s: %v", j.Name, err)
	}
}

func (h *harness) deleteJob(name string) {
	h.t.Helper()
	if err := h.kube.Tracker().Delete(jobsGVR, testNS, name); err != nil {
		h.t.Fatalf("deleting job %s: %v", name, err)
	}
}

// observeOwners brings the Job and StatefulSet caches up to date with the
// fake API, through TransformOwner, and calls the controller's handlers.
func (h *harness) observeOwners() {
	h.t.Helper()
	h.observeKind(h.jobs, jobsGVR, jobGVK, h.c.updateJob)
	h.observeKind(h.sets, statefulSetsGVR, statefulSetGVK, h.c.updateStatefulSet)
}

func (h *harness) observeKind(store cache.Indexer, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, update func(old, obj interface{})) {
	h.t.Helper()
	list, err := h.kube.Tracker().List(gvr, gvk, "")
	if err != nil {
		h.t.Fatalf("listing %s: %v", gvr.Resource, err)
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		h.t.Fatalf("listing %s: %v", gvr.Resource, err)
	}
	seen := map[string]bool{}
	for _, item := range items {
		obj, err := TransformOwner(item.DeepCopyObject())
		if err != nil {
			h.t.Fatalf("transforming %s: %v", gvr.Resource, err)
		}
		key, _ := cache.MetaNamespaceKeyFunc(obj)
		seen[key] = true
		old, exists, _ := store.GetByKey(key)
		if exists && old.(metav1.Object).GetResourceVersion() == obj.(metav1.Object).GetResourceVersion() {
			continue
		}
		if err := store.Update(obj); err != nil {
			h.t.Fatalf("caching %s: %v", gvr.Resource, err)
		}
		if exists {
			update(old, obj)
		} else {
			h.c.addOwner(obj)
		}
	}
	for _, key := range store.ListKeys() {
		if seen[key] {
			continue
		}
		old, _, _ := store.GetByKey(key)
		if err := store.Delete(old); err != nil {
			h.t.Fatalf("uncaching %s: %v", gvr.Resource, err)
		}
		h.c.deleteOwner(old)
	}
}

// TestTransformOwner checks what the Job and StatefulSet caches keep:
// identity, whether a Job has ended, and a StatefulSet's policy.
func TestTransformOwner(t *testing.T) {
	now := metav1.NewTime(t0)
	bigMeta := metav1.ObjectMeta{
		Name: "o", Namespace: testNS, UID: "uid-o", ResourceVersion: "7", Generation: 3,
		Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		Finalizers:    []string{"batch.kubernetes.io/job-tracking"},
	}
	keptMeta := metav1.ObjectMeta{Name: "o", Namespace: testNS, UID: "uid-o", ResourceVersion: "7"}
	template := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "trainer", Command: []string{"train"}}}}}
	cases := []struct {
		name     string
		in, want runtime.Object
	}{{
		name: "a Job keeps its identity and only the type and status of its Complete and Failed conditions",
		in: &batchv1.Job{
			ObjectMeta: bigMeta,
			Spec:       batchv1.JobSpec{Parallelism: ptr.To[int32](2), BackoffLimit: ptr.To[int32](6), Template: template},
			Status: batchv1.JobStatus{Active: 2, Failed: 1, StartTime: &now, Conditions: []batchv1.JobCondition{
				{Type: batchv1.JobSuspended, Status: corev1.ConditionFalse, Reason: "Resumed"},
				{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"},
				{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "m", LastTransitionTime: now},
				{Type: batchv1.JobComplete, Status: corev1.ConditionFalse, LastProbeTime: now},
			}},
		},
		want: &batchv1.Job{ObjectMeta: keptMeta, Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue},
			{Type: batchv1.JobComplete, Status: corev1.ConditionFalse},
		}}},
	}, {
		name: "a running Job keeps no condition",
		in:   &batchv1.Job{ObjectMeta: bigMeta, Status: batchv1.JobStatus{Active: 2}},
		want: &batchv1.Job{ObjectMeta: keptMeta},
	}, {
		name: "a StatefulSet keeps its identity and its pod management policy",
		in: &appsv1.StatefulSet{
			ObjectMeta: bigMeta,
			Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](4), PodManagementPolicy: appsv1.ParallelPodManagement,
				ServiceName: "svc", Template: template},
			Status: appsv1.StatefulSetStatus{Replicas: 4, ReadyReplicas: 2},
		},
		want: &appsv1.StatefulSet{ObjectMeta: keptMeta, Spec: appsv1.StatefulSetSpec{PodManagementPolicy: appsv1.ParallelPodManagement}},
	}, {
		name: "a StatefulSet with the policy unset keeps it unset",
		in:   &appsv1.StatefulSet{ObjectMeta: bigMeta},
		want: &appsv1.StatefulSet{ObjectMeta: keptMeta},
	}, {
		name: "other objects pass unchanged",
		in:   &corev1.ConfigMap{ObjectMeta: bigMeta},
		want: &corev1.ConfigMap{ObjectMeta: bigMeta},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TransformOwner(tc.in.DeepCopyObject())
			if err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("kept:\n%s", diff.Diff(tc.want, got))
			}
			again, err := TransformOwner(got.(runtime.Object).DeepCopyObject())
			if err != nil || !apiequality.Semantic.DeepEqual(again, got) {
				t.Errorf("not idempotent:\n%s", diff.Diff(got, again))
			}
		})
	}
}

// TestTransformPodKeepsItsJobOrStatefulSet checks which owner references
// a cached pod keeps: its controller, only if a sync reads its kind.
func TestTransformPodKeepsItsJobOrStatefulSet(t *testing.T) {
	controller := func(apiVersion, kind string) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "o", UID: "uid-o", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	}
	kept := func(apiVersion, kind string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "o", UID: "uid-o", Controller: ptr.To(true)}}
	}
	notController := controller("batch/v1", "Job")
	notController.Controller = nil
	cases := []struct {
		name string
		refs []metav1.OwnerReference
		want []metav1.OwnerReference
	}{
		{name: "a batch/v1 Job that controls the pod is kept, without blockOwnerDeletion", refs: []metav1.OwnerReference{controller("batch/v1", "Job")}, want: kept("batch/v1", "Job")},
		{name: "an apps/v1 StatefulSet that controls the pod is kept", refs: []metav1.OwnerReference{controller("apps/v1", "StatefulSet")}, want: kept("apps/v1", "StatefulSet")},
		{name: "a ReplicaSet is dropped", refs: []metav1.OwnerReference{controller("apps/v1", "ReplicaSet")}},
		{name: "a Job of another API version is dropped", refs: []metav1.OwnerReference{controller("batch/v2", "Job")}},
		{name: "a Job that is an owner but not the controller is dropped", refs: []metav1.OwnerReference{notController}},
		{name: "of several owners only the controller is kept", refs: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "cm", UID: "uid-cm"}, controller("batch/v1", "Job"),
		}, want: kept("batch/v1", "Job")},
		{name: "a pod without owners keeps none"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			p.OwnerReferences = tc.refs
			got, err := TransformPod(p)
			if err != nil {
				t.Fatal(err)
			}
			if refs := got.(*corev1.Pod).OwnerReferences; !apiequality.Semantic.DeepEqual(refs, tc.want) {
				t.Errorf("owner references = %+v, want %+v", refs, tc.want)
			}
		})
	}
}

// TestOwnerEventsRequeueOnlyTheirGroups checks that a Job's or
// StatefulSet's event queues the groups of the pods it controls, found by
// OwnerIndex, and nothing else.
func TestOwnerEventsRequeueOnlyTheirGroups(t *testing.T) {
	a, b := newJob("a"), newJob("b")
	aEnded := newJob("a", batchv1.JobFailed)
	aEnded.ResourceVersion = "9"
	objs := []runtime.Object{
		a, b, newStatefulSet("web", ""),
		newPod("a-0", inGroup("ga"), ofJob("a")), newPod("a-1", inGroup("ga2"), ofJob("a")),
		newPod("b-0", inGroup("gb"), ofJob("b")),
		newPod("web-0", inGroup("gw"), ofStatefulSet("web")),
		newPod("loose", inGroup("gl")),
		ownedGroup("gd", newJob("d")),
	}
	dEnded := newJob("d", batchv1.JobComplete)
	dEnded.ResourceVersion = "9"
	jobAt := func(j *batchv1.Job, rv string) *batchv1.Job { j = j.DeepCopy(); j.ResourceVersion = rv; return j }
	cases := []struct {
		name  string
		event func(c *Controller)
		want  []string
	}{
		{name: "a Job that ends queues the groups of its pods", event: func(c *Controller) { c.updateJob(jobAt(a, "8"), aEnded) }, want: []string{"ns/ga", "ns/ga2"}},
		{name: "a Job that starts running again queues them too", event: func(c *Controller) { c.updateJob(aEnded, jobAt(a, "10")) }, want: []string{"ns/ga", "ns/ga2"}},
		{name: "a Job update that does not end it queues nothing", event: func(c *Controller) { c.updateJob(jobAt(a, "8"), jobAt(a, "9")) }},
		{name: "a Job that is deleted queues the groups of its pods", event: func(c *Controller) { c.deleteOwner(b) }, want: []string{"ns/gb"}},
		{name: "a Job deleted while the watch was down queues them too", event: func(c *Controller) {
			c.deleteOwner(cache.DeletedFinalStateUnknown{Key: "ns/b", Obj: b})
		}, want: []string{"ns/gb"}},
		{name: "a Job that appears after its pods queues their groups", event: func(c *Controller) { c.addOwner(b) }, want: []string{"ns/gb"}},
		{name: "a Job without pods queues nothing", event: func(c *Controller) { c.addOwner(newJob("c")) }},
		{name: "a Job that ends queues the group it owns, which has no pod left (a suspended Job deleted them)", event: func(c *Controller) {
			c.updateJob(jobAt(newJob("d"), "8"), dEnded)
		}, want: []string{"ns/gd"}},
		{name: "a StatefulSet that appears queues the groups of its pods", event: func(c *Controller) { c.addOwner(newStatefulSet("web", "")) }, want: []string{"ns/gw"}},
		{name: "a StatefulSet update that keeps its policy queues nothing", event: func(c *Controller) {
			c.updateStatefulSet(newStatefulSet("web", ""), newStatefulSet("web", ""))
		}},
		{name: "a StatefulSet whose policy changes queues the groups of its pods", event: func(c *Controller) {
			c.updateStatefulSet(newStatefulSet("web", ""), newStatefulSet("web", appsv1.ParallelPodManagement))
		}, want: []string{"ns/gw"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, nil, objs...)
			h.queued()
			tc.event(h.c)
			if got := h.queued(); !slices.Equal(got, tc.want) {
				t.Errorf("queued %v, want %v", got, tc.want)
			}
		})
	}
}

// ownedGroup is an admitted group named name that job owns.
func ownedGroup(name string, job *batchv1.Job) *v1alpha1.PodGroup {
	pg := groupOwnedBy(admitted(2), job, 0)
	pg.Name = name
	return pg
}

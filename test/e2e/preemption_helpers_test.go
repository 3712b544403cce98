package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/generated/informers/externalversions"
	"github.com/muster-dev/muster/test/cluster"
)

// priorityClass creates a PriorityClass, which is cluster-scoped, for one
// test, and deletes it when the test ends. Name it after the test's
// namespace so that tests never share one.
func priorityClass(t *testing.T, ctx context.Context, name string, value int32) string {
	t.Helper()
	return env.NewPriorityClass(t, ctx, name, value)
}

// withPriorityClass gives a pod a PriorityClass.
func withPriorityClass(class string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.PriorityClassName = class }
}

// preemptibleJob is an Indexed gang Job (newGangJob) whose pods run only
// on the test's pool nodes, with the PriorityClass class. A pod of it that
// preemption evicts does not count as a failure: its podFailurePolicy
// ignores failures of pods that carry DisruptionTarget, the condition
// Muster writes before it deletes them. The Job controller still delays
// the replacement by its pod failure backoff, ignored failures included:
// with backoffLimitPerIndex that is 10s for an index that failed once,
// where the Job-wide backoff would double for each pod evicted at once
// (80s for 4).
func preemptibleJob(ns, name, class string, o jobOpts) *batchv1.Job {
	o.indexed = true
	o.podFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		}},
	}}}
	job := newGangJob(ns, name, o)
	job.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
	spec := &job.Spec.Template.Spec
	spec.PriorityClassName = class
	spec.NodeSelector = map[string]string{poolKey: ns}
	spec.Tolerations = []corev1.Toleration{{Key: poolKey, Operator: corev1.TolerationOpEqual, Value: ns, Effect: corev1.TaintEffectNoSchedule}}
	return job
}

// createPreemptibleJob creates job, and at the test's end deletes it in the
// foreground and waits until it is gone, before its namespace goes. A
// namespace deleted with such a Job in it (Indexed, backoffLimitPerIndex,
// podFailurePolicy) was seen to leave its pods Terminating with the Job
// controller's finalizer batch.kubernetes.io/job-tracking for about ten
// minutes, until the pod garbage collector took them, which held later
// tests' waits for deleted namespaces.
func createPreemptibleJob(t *testing.T, ctx context.Context, job *batchv1.Job) *batchv1.Job {
	t.Helper()
	created := createJob(t, ctx, job)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		jobs := kube.BatchV1().Jobs(job.Namespace)
		if err := jobs.Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting Job %s: %v", job.Name, err)
			return
		}
		if err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
			_, err := jobs.Get(ctx, job.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		}); err != nil {
			t.Errorf("Job %s still there 2 minutes after its foreground deletion: %v", job.Name, err)
		}
	})
	return created
}

// podRecord is what a preemptionWatch saw of one pod over its life.
type podRecord struct {
	name, group string
	// disruption and disruptionMessage are the reason and message of the
	// first DisruptionTarget=True seen on the pod, "" if none.
	disruption, disruptionMessage string
	// deleting is whether a deletionTimestamp was seen, and markedFirst
	// whether the pod already carried DisruptionTarget then.
	deleting, markedFirst bool
	// failed is whether the pod was seen Failed, and failedDisruption the
	// reason of its DisruptionTarget=True then, "" if none.
	failed                          bool
	failedDisruption, failedMessage string
	gone                            bool
}

// groupVersion is one version of a PodGroup's status that a
// preemptionWatch saw; seq orders versions of all groups as Muster wrote
// them (one watch of the namespace delivers them in that order).
type groupVersion struct {
	seq                 int
	uid                 types.UID
	admitted, preempted *metav1.Condition
	preemption          *v1alpha1.PodGroupPreemption
}

// preemptionWatch follows a namespace's pods and PodGroups for a whole test.
// From watches it records each pod's life (DisruptionTarget, deletion) and
// every status each group went through. It also samples the namespace
// every poll interval and records what must never happen to a gang:
//   - a pod is first seen released (ungated) while its group is neither
//     Admitted nor Finished, or while fewer than minCount of its pods are
//     live (neither ended nor being deleted): a release that is not whole;
//   - a group has a pod running, not being deleted, while fewer than
//     minCount of its released pods hold their place (running, being
//     deleted but not yet stopped, or succeeded) or, if it is admitted, are
//     about to (gated): a gang left short. A victim group (Preempted=True,
//     not admitted) is exempt: its pods are being evicted one by one, and
//     each test asserts that every one of them is.
//
// kube-scheduler reporting a pod Unschedulable is not recorded, unlike
// placementWatch: with fast release a preemptor's pods are released while
// the victims' pods still stop, and wait for them.
type preemptionWatch struct {
	ns     string
	mu     sync.Mutex
	seq    int
	pods   map[types.UID]*podRecord
	groups map[string][]groupVersion
	// released are the pods the sampler has seen released.
	released map[types.UID]bool
	// errs are what went wrong; its own lock, not mu, guards them.
	errs   watchErrors
	cancel context.CancelFunc
	done   chan struct{}
}

func watchPreemption(t *testing.T, ctx context.Context, ns string) *preemptionWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	w := &preemptionWatch{
		ns: ns, pods: map[types.UID]*podRecord{}, groups: map[string][]groupVersion{},
		released: map[types.UID]bool{}, cancel: cancel, done: make(chan struct{}),
	}
	podInformer := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns)).Core().V1().Pods().Informer()
	if _, err := podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.observePod(obj, false) },
		UpdateFunc: func(_, obj any) { w.observePod(obj, false) },
		DeleteFunc: func(obj any) { w.observePod(obj, true) },
	}); err != nil {
		t.Fatal(err)
	}
	groupInformer := externalversions.NewSharedInformerFactoryWithOptions(muster, 0, externalversions.WithNamespace(ns)).Scheduling().V1alpha1().PodGroups().Informer()
	if _, err := groupInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    w.observeGroup,
		UpdateFunc: func(_, obj any) { w.observeGroup(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	go podInformer.Run(ctx.Done())
	go groupInformer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), podInformer.HasSynced, groupInformer.HasSynced) {
		cancel()
		t.Fatal("the watches of pods and PodGroups did not sync")
	}
	go w.run(ctx)
	t.Cleanup(w.stop)
	return w
}

func (w *preemptionWatch) stop() {
	w.cancel()
	<-w.done
}

func (w *preemptionWatch) observePod(obj any, deleted bool) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.pods[p.UID]
	if r == nil {
		r = &podRecord{name: p.Name, group: p.Labels[scheduling.PodGroupLabel]}
		w.pods[p.UID] = r
	}
	if c := disruptionTarget(p); c != nil && r.disruption == "" {
		r.disruption, r.disruptionMessage = c.Reason, c.Message
	}
	if p.Status.Phase == corev1.PodFailed && !r.failed {
		r.failed = true
		if c := disruptionTarget(p); c != nil {
			r.failedDisruption, r.failedMessage = c.Reason, c.Message
		}
	}
	if p.DeletionTimestamp != nil && !r.deleting {
		r.deleting, r.markedFirst = true, r.disruption != ""
	}
	r.gone = r.gone || deleted
}

func disruptionTarget(p *corev1.Pod) *corev1.PodCondition {
	for i, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func (w *preemptionWatch) observeGroup(obj any) {
	pg, ok := obj.(*v1alpha1.PodGroup)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	w.groups[pg.Name] = append(w.groups[pg.Name], groupVersion{
		seq:        w.seq,
		uid:        pg.UID,
		admitted:   meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted),
		preempted:  meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionPreempted),
		preemption: pg.Status.Preemption.DeepCopy(),
	})
}

func (w *preemptionWatch) run(ctx context.Context) {
	defer close(w.done)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		w.sample(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (w *preemptionWatch) record(key, msg string) { w.errs.record(key, msg) }

// check fails the test if anything went wrong so far.
func (w *preemptionWatch) check(t *testing.T) {
	t.Helper()
	w.errs.check(t)
}

func (w *preemptionWatch) sample(ctx context.Context) {
	pods, err := kube.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: scheduling.PodGroupLabel})
	if err != nil {
		return
	}
	// Groups are listed after pods: a group seen here is at least as new as
	// the release of any pod in the list.
	groups, err := muster.SchedulingV1alpha1().PodGroups(w.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	byName := map[string]*v1alpha1.PodGroup{}
	for i := range groups.Items {
		byName[groups.Items[i].Name] = &groups.Items[i]
	}
	byGroup := map[string][]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		byGroup[p.Labels[scheduling.PodGroupLabel]] = append(byGroup[p.Labels[scheduling.PodGroupLabel]], p)
	}
	for g, members := range byGroup {
		pg := byName[g]
		if pg == nil || pg.Spec.SchedulingPolicy.Gang == nil {
			continue
		}
		minCount := int(pg.Spec.SchedulingPolicy.Gang.MinCount)
		admitted := meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionAdmitted)
		finished := meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionFinished)
		victim := meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionPreempted) && !admitted
		live, holding := 0, 0
		var running []string
		for _, p := range members {
			gated := scheduling.HasGate(p)
			if !scheduling.IsTerminal(p) && p.DeletionTimestamp == nil {
				live++
				if gated && admitted {
					holding++
				}
			}
			if gated {
				continue
			}
			if p.Status.Phase != corev1.PodFailed {
				holding++
			}
			if !scheduling.IsTerminal(p) && p.DeletionTimestamp == nil {
				running = append(running, p.Name)
			}
		}
		for _, p := range members {
			if scheduling.HasGate(p) || w.sawReleased(p.UID) {
				continue
			}
			if !admitted && !finished && !boundBeforeAdmissionEnded(p, pg) {
				w.record("early/"+string(p.UID), fmt.Sprintf("pod %s of gang %s was released while the group was not Admitted (conditions %v)", p.Name, g, pg.Status.Conditions))
			}
			if live < minCount {
				w.record("partial/"+string(p.UID), fmt.Sprintf("pod %s of gang %s was released while only %d of its %d pods were live", p.Name, g, live, minCount))
			}
		}
		if len(running) > 0 && !victim && holding < minCount {
			w.record("short/"+g, fmt.Sprintf("gang %s runs %v while only %d of its %d pods hold their place (%s)", g, running, holding, minCount, podStates(podValues(members))))
		}
	}
}

// boundBeforeAdmissionEnded reports whether pod p was bound no later than
// the moment its group's preemption turned Admitted False: it was released
// while the group was admitted, and the sampler only missed that
// moment (the group was preempted between two samples, as a loaded machine
// spaces them out). Timestamps have whole seconds, so the same second
// counts as before.
func boundBeforeAdmissionEnded(p *corev1.Pod, pg *v1alpha1.PodGroup) bool {
	admitted := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted)
	if admitted == nil || admitted.Status != metav1.ConditionFalse || admitted.Reason != scheduling.ReasonPreemptionByMuster {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return !c.LastTransitionTime.After(admitted.LastTransitionTime.Time)
		}
	}
	return false
}

// sawReleased reports whether the sampler saw the pod released before,
// and remembers that it has now.
func (w *preemptionWatch) sawReleased(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	saw := w.released[uid]
	w.released[uid] = true
	return saw
}

func podValues(pods []*corev1.Pod) []corev1.Pod {
	out := make([]corev1.Pod, len(pods))
	for i, p := range pods {
		out[i] = *p
	}
	return out
}

// pod returns what the watch saw of a pod.
func (w *preemptionWatch) pod(uid types.UID) podRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r := w.pods[uid]; r != nil {
		return *r
	}
	return podRecord{}
}

// history returns the versions of a group's status the watch saw, oldest first.
func (w *preemptionWatch) history(group string) []groupVersion {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]groupVersion(nil), w.groups[group]...)
}

// poll waits until cond holds, failing at once if the watch recorded a
// gang that was not whole.
func (w *preemptionWatch) poll(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(context.Context) (bool, error) {
		if e := w.errs.err(); e != "" {
			return false, fmt.Errorf("a gang was not whole: %s", e)
		}
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v; %s", what, err, w.describe())
	}
}

// describe is a one-line account of the namespace's groups and pods, for
// failures.
func (w *preemptionWatch) describe() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []string
	if groups, err := muster.SchedulingV1alpha1().PodGroups(w.ns).List(ctx, metav1.ListOptions{}); err == nil {
		for _, pg := range groups.Items {
			out = append(out, groupState(w.ns, pg.Name))
		}
	}
	if pods, err := kube.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{}); err == nil {
		var states []string
		for _, p := range pods.Items {
			st := p.Name + ":" + string(p.Status.Phase) + "@" + p.Spec.NodeName
			if scheduling.HasGate(&p) {
				st = p.Name + ":gated"
			}
			if c := disruptionTarget(&p); c != nil {
				st += ",DisruptionTarget/" + c.Reason
			}
			if p.DeletionTimestamp != nil {
				st += ",deleting"
			}
			states = append(states, st)
		}
		sort.Strings(states)
		out = append(out, "pods "+strings.Join(states, " "))
	}
	return strings.Join(out, "; ")
}

// waitPreemption waits until the group's status.preemption is set, and
// returns the first version that had it.
func (w *preemptionWatch) waitPreemption(t *testing.T, ctx context.Context, group string) groupVersion {
	t.Helper()
	var found groupVersion
	w.poll(t, ctx, "PodGroup "+group+" to record a preemption", func() bool {
		for _, v := range w.history(group) {
			if v.preemption != nil {
				found = v
				return true
			}
		}
		return false
	})
	return found
}

// waitPreempted waits until the group has Preempted=True, and returns the
// first version that had it.
func (w *preemptionWatch) waitPreempted(t *testing.T, ctx context.Context, group string) groupVersion {
	t.Helper()
	var found groupVersion
	w.poll(t, ctx, "PodGroup "+group+" to be Preempted", func() bool {
		for _, v := range w.history(group) {
			if v.preempted != nil && v.preempted.Status == metav1.ConditionTrue {
				found = v
				return true
			}
		}
		return false
	})
	return found
}

// everPreempted reports whether the group ever had the Preempted condition.
func (w *preemptionWatch) everPreempted(group string) bool {
	for _, v := range w.history(group) {
		if v.preempted != nil {
			return true
		}
	}
	return false
}

// expectRunning waits until n pods of the group, not counting the pods in
// old, are Running and no other pod of it is live, and returns them.
func (w *preemptionWatch) expectRunning(t *testing.T, ctx context.Context, group string, n int, old map[types.UID]bool) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	w.poll(t, ctx, fmt.Sprintf("%d pods of gang %s Running", n, group), func() bool {
		pods = pods[:0]
		running := 0
		for _, p := range groupPods(t, ctx, w.ns, group) {
			if old[p.UID] || scheduling.IsTerminal(&p) || p.DeletionTimestamp != nil {
				continue
			}
			pods = append(pods, p)
			if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == n && len(pods) == n
	})
	t.Logf("gang %s runs whole: %s", group, podStates(pods))
	return pods
}

// uids returns the UIDs of pods.
func uids(pods []corev1.Pod) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, p := range pods {
		out[p.UID] = true
	}
	return out
}

// expectEvicted waits until each of pods is gone, and asserts that it got
// DisruptionTarget with reason PreemptionByMuster before it was deleted.
// Then it waits until the group has counted them, and asserts that it
// counted each once in failed and in preempted (the group had no other
// failure).
func (w *preemptionWatch) expectEvicted(t *testing.T, ctx context.Context, group string, pods []corev1.Pod) {
	t.Helper()
	w.poll(t, ctx, fmt.Sprintf("the %d evicted pods of %s to be gone", len(pods), group), func() bool {
		for _, p := range pods {
			if !w.pod(p.UID).gone {
				return false
			}
		}
		return true
	})
	for _, p := range pods {
		r := w.pod(p.UID)
		if r.disruption != scheduling.ReasonPreemptionByMuster {
			t.Errorf("evicted pod %s had DisruptionTarget reason %q, want %s", p.Name, r.disruption, scheduling.ReasonPreemptionByMuster)
		}
		if !r.markedFirst {
			t.Errorf("evicted pod %s was deleted before it carried DisruptionTarget", p.Name)
		}
		// kube-scheduler before 1.35 (kubernetes#134927) preempts pods
		// already being deleted too, for a preemptor's released pods that
		// wait for the room, and rewrites the reason to
		// PreemptionByScheduler; Muster counts such a pod as preempted all
		// the same (the counts below), since it was deleted while its group
		// was preempted. Any other end is wrong.
		if r.failed && r.failedDisruption != scheduling.ReasonPreemptionByMuster && r.failedDisruption != corev1.PodReasonPreemptionByScheduler {
			t.Errorf("evicted pod %s ended Failed with DisruptionTarget reason %q (%q), want %s, or %s rewritten by kube-scheduler before 1.35",
				p.Name, r.failedDisruption, r.failedMessage, scheduling.ReasonPreemptionByMuster, corev1.PodReasonPreemptionByScheduler)
		}
	}
	pg := waitCounted(t, ctx, w.ns, group)
	if want := int32(len(pods)); pg.Status.Failed != want || pg.Status.Preempted != want {
		t.Errorf("group %s counts failed %d and preempted %d, want each of its %d evicted pods counted once in both",
			group, pg.Status.Failed, pg.Status.Preempted, want)
	}
}

// waitCounted waits until the group has no pod left to count: none that
// ended or is being deleted keeps Muster's finalizer, and its
// uncountedTerminatedPods is empty. Its counters are then final for the
// pods that ended so far.
func waitCounted(t *testing.T, ctx context.Context, ns, group string) *v1alpha1.PodGroup {
	t.Helper()
	var pg *v1alpha1.PodGroup
	waitFor(t, ctx, "PodGroup "+group+" to count its ended pods", func(ctx context.Context) (bool, error) {
		for _, p := range groupPods(t, ctx, ns, group) {
			if (scheduling.IsTerminal(&p) || p.DeletionTimestamp != nil) && scheduling.HasTrackingFinalizer(&p) {
				return false, nil
			}
		}
		var err error
		if pg, err = getGroup(ctx, ns, group); err != nil {
			return false, nil
		}
		u := pg.Status.UncountedTerminatedPods
		return u == nil || len(u.Succeeded)+len(u.Failed)+len(u.Preempted) == 0, nil
	})
	return pg
}

// expectUntouched asserts that a group that was not a victim kept its pods,
// all Running, none marked or deleted, and never had the Preempted
// condition.
func (w *preemptionWatch) expectUntouched(t *testing.T, ctx context.Context, group string, pods []corev1.Pod) {
	t.Helper()
	now := uids(groupPods(t, ctx, w.ns, group))
	for _, p := range pods {
		r := w.pod(p.UID)
		if !now[p.UID] || r.deleting || r.disruption != "" {
			t.Errorf("pod %s of the untouched gang %s: still there %t, deleted %t, DisruptionTarget %q", p.Name, group, now[p.UID], r.deleting, r.disruption)
		}
	}
	if len(now) != len(pods) {
		t.Errorf("the untouched gang %s has %d pods, want its %d", group, len(now), len(pods))
	}
	if w.everPreempted(group) {
		t.Errorf("the untouched gang %s had the Preempted condition: %+v", group, w.history(group))
	}
	if pg, err := getGroup(ctx, w.ns, group); err != nil || !meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionAdmitted) {
		t.Errorf("the untouched gang %s is no longer Admitted: %s", group, groupState(w.ns, group))
	}
}

// expectVictims asserts that a recorded preemption names exactly the groups
// want, as PodGroup victims of their priority and pod count.
func expectVictims(t *testing.T, ctx context.Context, ns string, got *v1alpha1.PodGroupPreemption, priority int32, want map[string]v1alpha1.PreemptionVictim) {
	t.Helper()
	if got.Priority != priority {
		t.Errorf("status.preemption.priority = %d, want %d", got.Priority, priority)
	}
	if got.Time.IsZero() {
		t.Error("status.preemption.time is not set")
	}
	if len(got.Victims) != len(want) {
		t.Fatalf("status.preemption names %d victims %+v, want %d: %v", len(got.Victims), got.Victims, len(want), want)
	}
	for _, v := range got.Victims {
		w, ok := want[v.Name]
		if !ok {
			t.Errorf("status.preemption names victim %+v, which is not one of %v", v, want)
			continue
		}
		w.Kind, w.Namespace, w.Name = v1alpha1.VictimKindPodGroup, ns, v.Name
		if pg, err := getGroup(ctx, ns, v.Name); err == nil {
			w.UID = pg.UID
		}
		if v != w {
			t.Errorf("status.preemption victim %+v, want %+v", v, w)
		}
	}
}

// expectEvent waits for an Event of the reason on the object named name.
func expectEvent(t *testing.T, ctx context.Context, ns, name, reason string) {
	t.Helper()
	waitFor(t, ctx, fmt.Sprintf("a %s event on %s", reason, name), func(ctx context.Context) (bool, error) {
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return false, nil
		}
		for _, e := range events.Items {
			if e.Reason == reason {
				return true, nil
			}
		}
		return false, nil
	})
}

// denyMusterEvictions installs a ValidatingAdmissionPolicy that refuses
// Muster's deletes of pods of namespace ns and, with status, its writes to
// their status, and waits until it applies. The returned func removes it.
func denyMusterEvictions(t *testing.T, ctx context.Context, ns string, status bool) func() {
	t.Helper()
	rule := func(op admissionregistrationv1.OperationType, resource string) admissionregistrationv1.NamedRuleWithOperations {
		return admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{op},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{resource}},
		}}
	}
	rules := []admissionregistrationv1.NamedRuleWithOperations{rule(admissionregistrationv1.Delete, "pods")}
	if status {
		rules = append(rules, rule(admissionregistrationv1.Update, "pods/status"))
	}
	fail := admissionregistrationv1.Fail
	name := ns + "-evictions"
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
				ResourceRules:     rules,
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "muster", Expression: fmt.Sprintf("request.userInfo.username == %q", musterUser())}},
			Validations:     []admissionregistrationv1.Validation{{Expression: "false", Message: "the e2e test holds Muster's evictions"}},
		},
	}
	if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating policy: %v", err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if _, err := kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating policy binding: %v", err)
	}
	allow := func() {
		_ = kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
		_ = kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.Background(), name, metav1.DeleteOptions{})
	}
	t.Cleanup(allow)
	// The policy applies once kube-apiserver's policy informer has it: probe
	// with a dry-run delete as Muster, of a pod of a group that does not
	// exist, until it is refused. The probe carries DisruptionTarget, as a
	// pod Muster evicts does, so that only this test's policy can refuse it
	// (muster-pod-writes lets Muster delete no other pod).
	probe := createPod(t, ctx, poolPod(ns, "probe", "probe", "1m", ""))
	probe.Status.Conditions = append(probe.Status.Conditions, corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: scheduling.ReasonPreemptionByMuster, LastTransitionTime: metav1.Now(),
	})
	if _, err := kube.CoreV1().Pods(ns).UpdateStatus(ctx, probe, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("marking the probe pod: %v", err)
	}
	impersonated := env.ImpersonatingClient(musterUser())
	waitFor(t, ctx, "the policy to deny Muster's pod deletes", func(ctx context.Context) (bool, error) {
		err := impersonated.CoreV1().Pods(ns).Delete(ctx, probe.Name, metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil && strings.Contains(err.Error(), "holds Muster's evictions"), nil
	})
	return allow
}

// tenantPool is a pool of nodes and classes two tenants share, named after
// neither: 2 nodes of 32 CPU, room for 4 pods of 15 CPU, tainted for the
// pool, and PriorityClasses low (100) and high (1000).
type tenantPool struct {
	name      string
	nodes     []string
	low, high string
}

func newTenantPool(t *testing.T, ctx context.Context, prefix string) tenantPool {
	t.Helper()
	name := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano()%100000)
	nodes, err := env.AddNodes(ctx, cluster.NodeSpec{
		Prefix: name, Count: 2, CPU: "32", Memory: "64Gi", Labels: map[string]string{poolKey: name},
		Taints: []corev1.Taint{{Key: poolKey, Value: name, Effect: corev1.TaintEffectNoSchedule}},
	})
	if err != nil {
		t.Fatalf("adding nodes: %v", err)
	}
	return tenantPool{name: name, nodes: nodes, low: priorityClass(t, ctx, name+"-low", 100), high: priorityClass(t, ctx, name+"-high", 1000)}
}

// gang is a gang of 4 pods of 15 CPU in ns, of the given class, created
// from annotations (minCount 4).
func (tp tenantPool) gang(ns, group, class string) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range 4 {
		p := poolPod(tp.name, fmt.Sprintf("%s-%d", group, i), group, "15", "10m")
		p.Namespace = ns
		p.Annotations[scheduling.MinCountAnnotation] = "4"
		p.Spec.PriorityClassName = class
		pods = append(pods, p)
	}
	return pods
}

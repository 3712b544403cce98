package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// counts are a group's finished pods, and of the failed those that Muster
// preempted.
type counts struct{ succeeded, failed, preempted int32 }

// outcome is what the load's pods did, read from them at the end: every pod
// still exists then, because every pod carries holdFinalizer.
type outcome struct {
	byGroup    map[string]counts
	unfinished []string // pods that never ended
	tracked    []string // pods that still carry Muster's finalizer
	succeeded  int
	failed     int
	// preempted are the failed pods that Muster marked for eviction;
	// evictedSucceeded those it marked that succeeded all the same (their
	// run ended before the kill).
	preempted        int
	evictedSucceeded []string
	// neverBound are pods that ended without ever being bound (PodGC
	// failed them once they were deleted): they are in no count.
	neverBound int
	// remarked are pods seen marked by Muster that ended with another
	// DisruptionTarget reason.
	remarked []string
	// ranOn are pods that kept running after Muster evicted the rest of
	// their gang's generation: the gang was left partly running.
	ranOn []string
	// topEvicted are pods of the highest class that Muster evicted:
	// nothing has a strictly higher priority, so none may be.
	topEvicted []string
	// names are the pods' names and classes by UID, to name a preemptor.
	names map[types.UID]string
	// notes say, by group, how many of its evicted pods were never bound
	// and how many succeeded, for a mismatch's message.
	notes map[string]*evictionNotes
}

// evictionNotes count the pods of a group that Muster evicted before they
// were bound (they ran nothing, and end Failed by PodGC), and those it
// marked that succeeded all the same.
type evictionNotes struct{ unbound, succeeded int }

func (n *evictionNotes) String() string {
	if n == nil {
		return ""
	}
	return fmt.Sprintf(" (of its evicted pods %d were never bound, %d succeeded)", n.unbound, n.succeeded)
}

// readOutcome lists the load's pods.
func (l *load) readOutcome(ctx context.Context) (outcome, error) {
	o := outcome{byGroup: map[string]counts{}, names: map[types.UID]string{}, notes: map[string]*evictionNotes{}}
	list, err := clients.kube.CoreV1().Pods(l.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return o, err
	}
	for i := range list.Items {
		p := &list.Items[i]
		group := p.Labels[scheduling.PodGroupLabel]
		if l.byName[group] == nil {
			continue
		}
		o.names[p.UID] = fmt.Sprintf("%s (%s)", p.Name, p.Spec.PriorityClassName)
		if scheduling.HasTrackingFinalizer(p) {
			o.tracked = append(o.tracked, p.Name)
		}
		c := o.byGroup[group]
		// A pod counts as preempted if it ever carried DisruptionTarget
		// with reason PreemptionByMuster: the informer saw it, or the pod
		// still shows it. kube-scheduler, preempting again a victim that
		// is being deleted, may have rewritten the reason since
		// (conditions merge by type); Muster counts such a pod as
		// preempted too.
		// kube-scheduler's own preemption counts too: Muster then preempts
		// the rest of that gang whole.
		_, seen := l.evictedUIDs.Load(p.UID)
		evicted := seen || preemptedByMuster(p) || disruption(p) == corev1.PodReasonPreemptionByScheduler
		if seen && !preemptedByMuster(p) {
			o.remarked = append(o.remarked, fmt.Sprintf("%s (%s)", p.Name, disruption(p)))
		}
		if evicted {
			n := o.notes[group]
			if n == nil {
				n = &evictionNotes{}
				o.notes[group] = n
			}
			if p.Spec.NodeName == "" {
				n.unbound++
			}
			if p.Status.Phase == corev1.PodSucceeded {
				n.succeeded++
			}
		}
		if evicted && p.Spec.PriorityClassName == classes[len(classes)-1].name {
			o.topEvicted = append(o.topEvicted, p.Name)
		}
		// A pod deleted before it was ever bound ran nothing: PodGC fails
		// it, but it did nothing to count, and Muster counts it in neither
		// succeeded nor failed (docs/controller.md, "Deleted pods").
		if p.Spec.NodeName == "" && scheduling.IsTerminal(p) {
			o.neverBound++
			o.byGroup[group] = c
			continue
		}
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			c.succeeded++
			o.succeeded++
			if evicted {
				o.evictedSucceeded = append(o.evictedSucceeded, p.Name)
			}
		case corev1.PodFailed:
			c.failed++
			o.failed++
			if evicted {
				c.preempted++
				o.preempted++
			}
		default:
			o.unfinished = append(o.unfinished, fmt.Sprintf("%s (%s)", p.Name, p.Status.Phase))
		}
		o.byGroup[group] = c
	}
	o.ranOn = ranOn(list.Items, l.leaderless)
	return o, nil
}

// evictionSlack is how long after the last of its generation's pods was
// marked for eviction a pod of it may still end, while a controller leads:
// the grace period of 1s, and timestamps of whole seconds. Time in which no
// replica led (the leader was killed between marking a gang and evicting
// the rest, and the next had not taken the Lease) is added: no controller
// could act then, and the next leader evicts the rest when it takes over.
const evictionSlack = 3 * time.Second

// ranOn lists the pods that were bound before Muster marked the last pod
// of their gang's generation for eviction, and ended undisrupted more than
// evictionSlack after it: Muster evicts a preempted gang whole. (A pod of
// the generation that was still gated then may be released with a later
// admission, and bound after the mark.)
func ranOn(pods []corev1.Pod, leaderless []window) []string {
	type key struct {
		group string
		gen   int
	}
	marked := map[key]time.Time{}
	for i := range pods {
		p := &pods[i]
		if t, ok := markedAt(p); ok {
			k := key{p.Labels[scheduling.PodGroupLabel], generation(p)}
			if t.After(marked[k]) {
				marked[k] = t
			}
		}
	}
	var out []string
	for i := range pods {
		p := &pods[i]
		at, ok := marked[key{p.Labels[scheduling.PodGroupLabel], generation(p)}]
		// Muster evicts the released pods that are not being deleted: a pod
		// that someone else deleted or disrupted first (the load, or
		// kube-scheduler's preemption, which fails the run on its own) was
		// not Muster's to evict.
		if !ok || p.Spec.NodeName == "" || disruption(p) != "" || deletedBy(p, at) {
			continue
		}
		bound, ok := boundAt(p)
		if !ok || bound.After(at) {
			continue
		}
		if end, ok := finishedAt(p); ok && end.Sub(at) > evictionSlack+overlap(leaderless, at, end) {
			out = append(out, fmt.Sprintf("%s ended %s after its gang was evicted (%s of it with no leader)", p.Name, end.Sub(at), overlap(leaderless, at, end).Round(time.Millisecond)))
		}
	}
	return out
}

// markedAt is when the pod was marked for preemption, by Muster or by
// kube-scheduler (whose preemption Muster completes for the whole gang).
func markedAt(p *corev1.Pod) (time.Time, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && (c.Reason == scheduling.ReasonPreemptionByMuster || c.Reason == corev1.PodReasonPreemptionByScheduler) {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// deletedBy reports whether the pod's deletion was asked for by t.
func deletedBy(p *corev1.Pod, t time.Time) bool {
	if p.DeletionTimestamp == nil {
		return false
	}
	asked := p.DeletionTimestamp.Time
	if g := p.DeletionGracePeriodSeconds; g != nil {
		asked = asked.Add(-time.Duration(*g) * time.Second)
	}
	return !asked.After(t)
}

// boundAt is when the pod was bound to its node.
func boundAt(p *corev1.Pod) (time.Time, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

// finishedAt is when the pod's container ended.
func finishedAt(p *corev1.Pod) (time.Time, bool) {
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			return t.FinishedAt.Time, true
		}
	}
	return time.Time{}, false
}

// mismatches compares every gang's PodGroup status with what its pods did,
// noted by notes.
func (l *load) mismatches(ctx context.Context, want map[string]counts, notes map[string]*evictionNotes) ([]string, error) {
	list, err := clients.muster.SchedulingV1alpha1().PodGroups(l.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	got := map[string]counts{}
	for _, pg := range list.Items {
		got[pg.Name] = counts{pg.Status.Succeeded, pg.Status.Failed, pg.Status.Preempted}
	}
	var bad []string
	for _, g := range l.gangs {
		w := want[g.name]
		c, ok := got[g.name]
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("%s: no PodGroup (want succeeded %d, failed %d, preempted %d)", g.name, w.succeeded, w.failed, w.preempted))
		case c != w:
			bad = append(bad, fmt.Sprintf("%s: succeeded %d, failed %d, preempted %d; its pods: %d, %d and %d%s",
				g.name, c.succeeded, c.failed, c.preempted, w.succeeded, w.failed, w.preempted, notes[g.name]))
		}
	}
	return bad, nil
}

// preemptedGroups lists the groups that show the Preempted condition, True
// or (once admitted again) False: each was preempted at least once.
func (l *load) preemptedGroups(ctx context.Context) ([]string, error) {
	list, err := clients.muster.SchedulingV1alpha1().PodGroups(l.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, pg := range list.Items {
		if l.byName[pg.Name] != nil && meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionPreempted) != nil {
			names = append(names, pg.Name)
		}
	}
	return names, nil
}

// converge waits until no pod carries Muster's finalizer and every group's
// counts equal what its pods did, and returns the last outcome and
// mismatches seen.
func (l *load) converge(ctx context.Context, timeout time.Duration) (outcome, []string, error) {
	deadline := time.Now().Add(timeout)
	for {
		o, err := l.readOutcome(ctx)
		if err != nil {
			return o, nil, err
		}
		bad, err := l.mismatches(ctx, o.byGroup, o.notes)
		if err != nil {
			return o, nil, err
		}
		if (len(bad) == 0 && len(o.tracked) == 0 && len(o.unfinished) == 0) || time.Now().After(deadline) {
			return o, bad, nil
		}
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
			return o, bad, ctx.Err()
		}
	}
}

// releaseHeld takes holdFinalizer off every pod of the load, 16 at once.
func (l *load) releaseHeld(ctx context.Context) error {
	pods := clients.kube.CoreV1().Pods(l.ns)
	release := []byte(`{"metadata":{"$deleteFromPrimitiveList/finalizers":["` + holdFinalizer + `"]}}`)
	work := make(chan string)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				if err := l.retry(ctx, "releasing "+name, func(ctx context.Context) error {
					_, err := pods.Patch(ctx, name, types.StrategicMergePatchType, release, metav1.PatchOptions{})
					return ignoreNotFound(err)
				}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for _, p := range l.allPods() {
		select {
		case work <- p.Name:
		case err = <-errs:
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}

// deleteAll takes the load's own finalizer off every pod, deletes them,
// and waits for the namespace to hold no pod; it returns the pods
// left, which are stuck Terminating.
func (l *load) deleteAll(ctx context.Context, timeout time.Duration) ([]string, error) {
	pods := clients.kube.CoreV1().Pods(l.ns)
	// Gated pods go first, while the held pods still stand: a preempted
	// gang waits until its evicted pods are gone, and once the held pods
	// went, it would be admitted again and run, and its counts change
	// after they were checked.
	if err := l.deleteGated(ctx); err != nil {
		return nil, err
	}
	// Released first, every pod that has ended is removed at once when it
	// is deleted (a grace period of 0), rather than waiting on kwok.
	if err := l.releaseHeld(ctx); err != nil {
		return nil, err
	}
	// A gang at a time, 8 at once: kube-apiserver deletes a collection with
	// one worker, and 10,000 pods in one request outlast its timeout.
	work := make(chan *gang)
	errs := make(chan error, len(l.gangs))
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range work {
				selector := labels.SelectorFromSet(labels.Set{scheduling.PodGroupLabel: g.name}).String()
				errs <- l.retry(ctx, "deleting the pods of "+g.name, func(ctx context.Context) error {
					return pods.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector})
				})
			}
		}()
	}
	for _, g := range l.gangs {
		work <- g
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return nil, err
		}
	}
	deadline := time.Now().Add(timeout)
	for {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		if len(list.Items) == 0 {
			return nil, nil
		}
		if time.Now().After(deadline) {
			var left []string
			for _, p := range list.Items {
				left = append(left, fmt.Sprintf("%s (%s, finalizers %v)", p.Name, p.Status.Phase, p.Finalizers))
			}
			return left, nil
		}
		time.Sleep(time.Second)
	}
}

// deleteGated deletes the pods that still carry Muster's gate, and waits
// until none is left: they never ran, and count nowhere.
func (l *load) deleteGated(ctx context.Context) error {
	pods := clients.kube.CoreV1().Pods(l.ns)
	for {
		list, err := pods.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		gated := 0
		for i := range list.Items {
			p := &list.Items[i]
			if !scheduling.HasGate(p) {
				continue
			}
			gated++
			if p.DeletionTimestamp != nil {
				continue
			}
			err := pods.Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &p.UID}})
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return fmt.Errorf("deleting gated pod %s: %w", p.Name, err)
			}
		}
		if gated == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	"github.com/muster-dev/muster/test/cluster"
)

const (
	// holdFinalizer keeps every pod of the load until the end, so that the
	// last phase and conditions of those deleted while they ran (by the
	// load, or by Muster's preemption) can be read there.
	holdFinalizer = "chaos.muster.dev/hold"
	// deleteAnnotation marks a pod that the load deletes once it runs.
	deleteAnnotation = "chaos.muster.dev/delete-while-running"
	// generationAnnotation numbers a gang's restarts: the load's framework
	// creates the whole gang again, as generation 1, 2, ..., once Muster
	// preempted it.
	generationAnnotation = "chaos.muster.dev/generation"
	// maxGenerations bounds a gang's restarts after preemption, as a
	// framework's backoff limit does; a gang preempted more often is left
	// as it is, waiting whole.
	maxGenerations = 3

	// failShare of the pods exit 1; deleteShare are deleted while running.
	failShare   = 0.10
	deleteShare = 0.03
	// maxActive bounds the pods created and not yet finished, so that the
	// load runs at the pace the cluster can take rather than piling up.
	maxActive = 300
	// creators is how many gangs are created at once.
	creators = 6
)

// gang is one PodGroup of the load and the fate of each of its pods.
type gang struct {
	name string
	// viaAnnotation gangs have no PodGroup from the load: their pods carry
	// the min-count annotation, and the controller creates the group.
	viaAnnotation bool
	class         priorityClass
	size          int
	// lastSent is the newest generation whose last pod's create was sent
	// (-1 before): a pod of a later generation released before that was
	// released short.
	lastSent atomic.Int32
	// short, once set, says which pod first showed the gang released
	// short, and when.
	short atomic.Pointer[string]

	mu sync.Mutex
	// pods are every generation's pods, in the order they were planned.
	pods []*corev1.Pod
	// seen is what the informer last showed of each pod; evicted are the
	// pods seen marked by Muster's preemption.
	seen    map[string]podSeen
	evicted map[string]bool
	// restartPending is set when a pod is seen evicted, and cleared when
	// the framework creates the next generation.
	restartPending bool
	generation     int
	gaveUp         bool
	// history is what led to each restart, for the report of a gang
	// released short.
	history []string
}

// podSeen is what a gang's restart waits on: none of its pods is released
// and still running.
type podSeen struct{ gated, terminal, deleted bool }

// load creates gangs of pods that start, run and finish on kwok, keeping at
// most maxActive unfinished, and watches that none is released short.
type load struct {
	ns     string
	kube   kubernetes.Interface
	muster versioned.Interface
	gangs  []*gang
	byName map[string]*gang

	// leaderless are the spans in which no replica led (leaderKiller), set
	// once the killer has stopped and before the outcome is read.
	leaderless []window

	// ending is set once the load's outcome has been read: the framework
	// then restarts no gang and deletes no pod of its own, so that the
	// pods the end deletes add nothing to count (a gang restarted while
	// they are deleted would run, and its counts change after the check).
	ending atomic.Bool

	// total is how many pods the load creates, restarts included.
	total    atomic.Int64
	created  atomic.Int64
	finished atomic.Int64
	restarts atomic.Int64
	// staleDeletes are gated pods of a preempted gang's earlier
	// generation that its restart deleted.
	staleDeletes atomic.Int64
	retries      atomic.Int64
	deletes      atomic.Int64
	checks       atomic.Int64
	seenFinish   sync.Map // pod name -> struct{}
	seenDelete   sync.Map // pod name -> struct{}
	// evictedUIDs are the pods seen with DisruptionTarget of reason
	// PreemptionByMuster; otherDisruptions those seen with another reason,
	// by reason.
	evictedUIDs      sync.Map // pod UID -> struct{}
	mu               sync.Mutex
	otherDisruptions map[string][]string
	errs             []error
	wake             chan struct{}
}

// newLoad plans gangs of 2 to 8 pods that add up to pods, one in four
// created from pod annotations, each of a PriorityClass drawn by the
// classes' shares, with each pod's run time and outcome drawn from rng.
func newLoad(ns string, kube kubernetes.Interface, muster versioned.Interface, pods int, rng *rand.Rand) *load {
	l := &load{
		ns: ns, kube: kube, muster: muster, byName: map[string]*gang{},
		otherDisruptions: map[string][]string{}, wake: make(chan struct{}, 1),
	}
	for left, i := pods, 0; left > 0; i++ {
		size := 2 + rng.IntN(7)
		if left-size < 2 {
			size = left
		}
		left -= size
		g := &gang{
			name: fmt.Sprintf("g-%05d", i), viaAnnotation: i%4 == 3, class: drawClass(rng), size: size,
			seen: map[string]podSeen{}, evicted: map[string]bool{},
		}
		g.lastSent.Store(-1)
		for j := range size {
			g.pods = append(g.pods, l.newPod(g, j, rng))
		}
		l.gangs = append(l.gangs, g)
		l.byName[g.name] = g
	}
	l.total.Store(int64(l.planned()))
	return l
}

// newPod is pod j of a gang's first generation.
func (l *load) newPod(g *gang, j int, rng *rand.Rand) *corev1.Pod {
	grace := int64(1)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s-%d", g.name, j),
			Namespace: l.ns,
			Labels:    map[string]string{scheduling.PodGroupLabel: g.name},
			Annotations: map[string]string{
				cluster.RunForAnnotation: fmt.Sprintf("%dms", 500+rng.IntN(1500)),
				generationAnnotation:     "0",
			},
			Finalizers: []string{holdFinalizer},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			}},
			TerminationGracePeriodSeconds: &grace,
			PriorityClassName:             g.class.name,
		},
	}
	if g.viaAnnotation {
		p.Annotations[scheduling.MinCountAnnotation] = strconv.Itoa(g.size)
	}
	if rng.Float64() < failShare {
		p.Annotations[cluster.ExitCodeAnnotation] = "1"
	}
	if rng.Float64() < deleteShare {
		p.Annotations[deleteAnnotation] = "true"
	}
	return p
}

// planned is how many pods the load plans before any restart.
func (l *load) planned() int {
	n := 0
	for _, g := range l.gangs {
		n += g.size
	}
	return n
}

// pods is how many pods the load creates in all, restarts included.
func (l *load) pods() int { return int(l.total.Load()) }

// allPods lists every pod the load planned, restarts included.
func (l *load) allPods() []*corev1.Pod {
	var pods []*corev1.Pod
	for _, g := range l.gangs {
		g.mu.Lock()
		pods = append(pods, g.pods...)
		g.mu.Unlock()
	}
	return pods
}

// run creates every gang with creators workers, and returns once all are
// created.
func (l *load) run(ctx context.Context) error {
	work := make(chan *gang)
	errs := make(chan error, creators)
	var wg sync.WaitGroup
	for range creators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range work {
				if err := l.createGang(ctx, g); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var err error
feed:
	for _, g := range l.gangs {
		select {
		case work <- g:
		case err = <-errs:
			break feed
		case <-ctx.Done():
			err = ctx.Err()
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

// createGang creates a gang's group (unless the controller creates it from
// annotations) and its pods, all but the last, then checks that none of
// them was released before creating the last one.
func (l *load) createGang(ctx context.Context, g *gang) error {
	if err := l.waitForRoom(ctx, g.size); err != nil {
		return err
	}
	if !g.viaAnnotation {
		pg := &v1alpha1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: g.name, Namespace: l.ns},
			Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{
				Gang: &v1alpha1.GangSchedulingPolicy{MinCount: int32(g.size)},
			}},
		}
		if err := l.retry(ctx, "creating PodGroup "+g.name, func(ctx context.Context) error {
			_, err := l.muster.SchedulingV1alpha1().PodGroups(l.ns).Create(ctx, pg, metav1.CreateOptions{})
			return ignoreExists(err)
		}); err != nil {
			return err
		}
	}
	g.mu.Lock()
	pods := g.pods[:g.size]
	g.mu.Unlock()
	return l.createGeneration(ctx, g, 0, pods)
}

// createGeneration creates the pods of a gang's generation, all but the
// last, then checks that none of them was released before creating the
// last one.
func (l *load) createGeneration(ctx context.Context, g *gang, gen int, pods []*corev1.Pod) error {
	last := len(pods) - 1
	for _, p := range pods[:last] {
		if err := l.createPod(ctx, p); err != nil {
			return err
		}
	}
	// Give a faulty controller time to release the short gang, then look.
	// With minCount one below the gang's size, as a stand-in for such a
	// controller, this caught 11 of 44 gangs within 200ms of waiting.
	time.Sleep(time.Duration(rand.IntN(500)) * time.Millisecond)
	if err := l.checkHeld(ctx, g, gen); err != nil {
		return err
	}
	g.lastSent.Store(int32(gen))
	return l.createPod(ctx, pods[last])
}

// checkHeld reads the gang's pods and marks it short if any of generation
// gen lost Muster's gate while the generation still lacked a pod.
func (l *load) checkHeld(ctx context.Context, g *gang, gen int) error {
	selector := labels.SelectorFromSet(labels.Set{scheduling.PodGroupLabel: g.name}).String()
	return l.retry(ctx, "reading the pods of "+g.name, func(ctx context.Context) error {
		list, err := l.kube.CoreV1().Pods(l.ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		l.checks.Add(1)
		for i := range list.Items {
			if p := &list.Items[i]; generation(p) == gen && !scheduling.HasGate(p) {
				g.markShort(p, "listed without the gate before the generation's last pod was created")
			}
		}
		return nil
	})
}

// markShort marks the gang released short, and keeps the first pod that
// showed it: its name, generation, resourceVersion, the time and how it
// was seen, which the report prints to find it in Muster's logs.
func (g *gang) markShort(p *corev1.Pod, how string) {
	if g.short.Load() != nil {
		return
	}
	g.mu.Lock()
	history, seen := strings.Join(g.history, "; "), g.seenNow()
	g.mu.Unlock()
	why := fmt.Sprintf("%s: pod %s (generation %d, resourceVersion %s, node %q) %s at %s; pods as last seen: %s; restarts: %s",
		g.name, p.Name, generation(p), p.ResourceVersion, p.Spec.NodeName, how, stamp(), seen, history)
	g.short.CompareAndSwap(nil, &why)
}

// stamp is the time of day, to the millisecond, as Muster's logs print it.
func stamp() string { return time.Now().Format("15:04:05.000") }

// seenNow lists what the informer last showed of each of the gang's pods,
// sorted by name. g.mu is held.
func (g *gang) seenNow() string {
	var out []string
	for name, s := range g.seen {
		out = append(out, fmt.Sprintf("%s gated=%t terminal=%t deleted=%t", name, s.gated, s.terminal, s.deleted))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// generation is the generation of a pod of the load.
func generation(p *corev1.Pod) int {
	gen, _ := strconv.Atoi(p.Annotations[generationAnnotation])
	return gen
}

func (l *load) createPod(ctx context.Context, p *corev1.Pod) error {
	err := l.retry(ctx, "creating pod "+p.Name, func(ctx context.Context) error {
		_, err := l.kube.CoreV1().Pods(l.ns).Create(ctx, p, metav1.CreateOptions{})
		return ignoreExists(err)
	})
	if err == nil {
		l.created.Add(1)
	}
	return err
}

// waitForRoom blocks until n more pods keep the unfinished ones within
// maxActive.
func (l *load) waitForRoom(ctx context.Context, n int) error {
	for l.created.Load()-l.finished.Load()+int64(n) > maxActive {
		select {
		case <-l.wake:
		case <-time.After(time.Second):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// observe is the pod informer's handler: it counts finished pods, deletes
// the pods marked for it once they run, records the pods that were marked
// for eviction, restarts a gang that Muster preempted, and marks a gang
// short when one of its pods is seen without the gate before the last pod
// of its generation was sent.
func (l *load) observe(ctx context.Context, p *corev1.Pod) {
	g := l.byName[p.Labels[scheduling.PodGroupLabel]]
	if g == nil || l.ending.Load() {
		return
	}
	if sent := g.lastSent.Load(); !scheduling.HasGate(p) && int(sent) < generation(p) {
		g.markShort(p, fmt.Sprintf("seen without the gate while the newest generation whose last pod was sent is %d", sent))
	}
	switch reason := disruption(p); reason {
	case "":
	case scheduling.ReasonPreemptionByMuster:
		l.evictedUIDs.Store(p.UID, struct{}{})
	default:
		l.mu.Lock()
		if !slices.Contains(l.otherDisruptions[reason], p.Name) {
			l.otherDisruptions[reason] = append(l.otherDisruptions[reason], p.Name)
		}
		l.mu.Unlock()
	}
	// A restart is planned before the pod that allows it is counted as
	// finished, so that the load is never seen finished short of it.
	if r := g.observe(p); r.pods != nil {
		l.total.Add(int64(len(r.pods)))
		l.restarts.Add(1)
		go func() {
			if err := l.restart(ctx, g, r); err != nil {
				l.mu.Lock()
				l.errs = append(l.errs, fmt.Errorf("restarting gang %s: %w", g.name, err))
				l.mu.Unlock()
			}
		}()
	}
	if scheduling.IsTerminal(p) {
		if _, seen := l.seenFinish.LoadOrStore(p.Name, struct{}{}); !seen {
			l.finished.Add(1)
			select {
			case l.wake <- struct{}{}:
			default:
			}
		}
	}
	if p.Annotations[deleteAnnotation] != "" && p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
		if _, seen := l.seenDelete.LoadOrStore(p.Name, struct{}{}); !seen {
			go l.deleteRunning(ctx, p.Name)
		}
	}
}

// restartPlan is a gang's next generation, and the pods of earlier ones
// that are still gated, which the framework deletes first.
type restartPlan struct {
	gen   int
	pods  []*corev1.Pod
	stale []string
}

// observe records what the informer shows of one of the gang's pods, and
// once Muster has preempted the gang and none of its pods is released and
// still running, plans the next generation: the whole gang again, as a
// framework restarts a gang that lost pods (JobSet's failure policy, for
// one), which also deletes what is left of the old one. Muster must keep
// it gated until the whole gang fits. Each pod of the new generation is
// the same as the first's, so that a run replays. The plan has no pods
// when no restart is due, or the gang was restarted maxGenerations-1 times
// already.
func (g *gang) observe(p *corev1.Pod) restartPlan {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.seen[p.Name] = podSeen{gated: scheduling.HasGate(p), terminal: scheduling.IsTerminal(p), deleted: p.DeletionTimestamp != nil}
	// A framework restarts the generation it runs. Muster's mark may land
	// on a pod that had just ended on its own (its cache did not show the
	// end yet), after the restart that pod's gang already got: a mark on an
	// earlier generation's pod starts nothing, or two generations would run
	// side by side, and Muster would rightly release a mix of them.
	if preemptedByMuster(p) && !g.evicted[p.Name] && generation(p) == g.generation {
		g.evicted[p.Name] = true
		g.restartPending = true
		g.history = append(g.history, fmt.Sprintf("%s seen preempted by Muster at %s (resourceVersion %s)", p.Name, stamp(), p.ResourceVersion))
	}
	if !g.restartPending {
		return restartPlan{}
	}
	var stale []string
	for name, s := range g.seen {
		switch {
		case s.terminal:
		case !s.gated:
			return restartPlan{}
		case !s.deleted:
			stale = append(stale, name)
		}
	}
	g.restartPending = false
	if g.generation+1 >= maxGenerations {
		g.gaveUp = true
		return restartPlan{}
	}
	g.generation++
	pods := make([]*corev1.Pod, g.size)
	for j, first := range g.pods[:g.size] {
		q := first.DeepCopy()
		q.Name = fmt.Sprintf("%s-r%d-%d", g.name, g.generation, j)
		q.Annotations[generationAnnotation] = strconv.Itoa(g.generation)
		pods[j] = q
	}
	g.pods = append(g.pods, pods...)
	sort.Strings(stale)
	g.history = append(g.history, fmt.Sprintf("generation %d planned at %s, deleting %v first; pods as last seen: %s", g.generation, stamp(), stale, g.seenNow()))
	return restartPlan{gen: g.generation, pods: pods, stale: stale}
}

// restart deletes what is still gated of a gang's earlier generations,
// then creates the next.
func (l *load) restart(ctx context.Context, g *gang, r restartPlan) error {
	for _, name := range r.stale {
		if err := l.retry(ctx, "deleting gated pod "+name, func(ctx context.Context) error {
			return ignoreNotFound(l.kube.CoreV1().Pods(l.ns).Delete(ctx, name, metav1.DeleteOptions{}))
		}); err != nil {
			return err
		}
		l.staleDeletes.Add(1)
	}
	return l.createGeneration(ctx, g, r.gen, r.pods)
}

// deleteRunning deletes a running pod, as a user or a framework would.
func (l *load) deleteRunning(ctx context.Context, name string) {
	err := l.retry(ctx, "deleting pod "+name, func(ctx context.Context) error {
		err := l.kube.CoreV1().Pods(l.ns).Delete(ctx, name, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
	if err == nil {
		l.deletes.Add(1)
	}
}

// retry calls fn until it succeeds or ctx ends, backing off from 100ms to
// 1s: during the chaos any call may meet a server that is down. Only a
// request refused as invalid ends it at once.
func (l *load) retry(ctx context.Context, what string, fn func(context.Context) error) error {
	backoff := 100 * time.Millisecond
	for {
		callCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
		err := fn(callCtx)
		cancel()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), err)
		}
		// A request the server refuses as such is a defect, not chaos.
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return fmt.Errorf("%s: %w", what, err)
		}
		l.retries.Add(1)
		klog.V(2).InfoS("Retrying", "what", what, "err", err)
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
		}
		backoff = min(2*backoff, time.Second)
	}
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
)

// clients talk to kube-apiserver, and through its aggregator to Muster.
// The probe's have their own connections, so that a backlog of the load
// does not delay them.
var clients struct {
	kube        kubernetes.Interface
	muster      versioned.Interface
	probeKube   kubernetes.Interface
	probeMuster versioned.Interface
}

func newClients() {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 500, 1000
	clients.kube = kubernetes.NewForConfigOrDie(cfg)
	clients.muster = versioned.NewForConfigOrDie(cfg)
	probe := rest.CopyConfig(env.Config)
	probe.QPS, probe.Burst = -1, 0
	clients.probeKube = kubernetes.NewForConfigOrDie(probe)
	clients.probeMuster = versioned.NewForConfigOrDie(probe)
}

// TestChaos drives -chaos.pods pods in gangs of mixed priorities through
// Muster, on nodes too small for them all, while R1 kills the leader and R2
// restarts kube-apiserver, etcd and Muster's etcd, then checks that every
// group's counts (preempted included) equal what its pods did, that no pod
// keeps Muster's finalizer or is stuck Terminating, that no gang was
// released short (a preempted gang's restart included) or partly evicted,
// that preemption happened at all, and that the APIs answered within 10s
// of each restart.
func TestChaos(t *testing.T) {
	began := time.Now()
	budget := 10*time.Minute + time.Duration(*podsFlag)*100*time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	newClients()

	ns := "chaos"
	if _, err := clients.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace: %v", err)
	}
	if err := env.WaitForDefaultServiceAccount(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := createClasses(ctx); err != nil {
		t.Fatal(err)
	}
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	l := newLoad(ns, clients.kube, clients.muster, *podsFlag, rand.New(rand.NewPCG(seed, 0)))
	t.Logf("load: %d pods in %d gangs of 2 to 8 (one in four created from annotations; %s), seed %d", l.pods(), len(l.gangs), l.classMix(), seed)
	p := &probe{ns: ns}
	if err := p.setUp(ctx); err != nil {
		t.Fatalf("creating the probe's objects: %v", err)
	}
	stopInformer := l.watch(ctx)
	defer stopInformer()
	groups, stopGroups := l.watchGroups()
	defer stopGroups()

	// R1 and R2 run while the load runs.
	chaosCtx, stopChaos := context.WithCancel(ctx)
	killer := &leaderKiller{minDwell: 2 * time.Second, maxDwell: 5 * time.Second}
	killerDone := make(chan struct{})
	go func() { defer close(killerDone); killer.run(chaosCtx) }()
	restartsDone := make(chan []restart, 1)
	go func() { restartsDone <- p.runRestarts(chaosCtx, l) }()

	go l.logProgress(chaosCtx, t)
	if err := l.run(ctx); err != nil {
		stopChaos()
		t.Fatalf("creating the load: %v", err)
	}
	created := time.Since(began)
	if err := l.waitFinished(ctx); err != nil {
		stopChaos()
		l.diagnose(context.Background(), t)
		t.Fatalf("waiting for every pod to finish: %v", err)
	}
	finished := time.Since(began)
	stopChaos()
	<-killerDone
	restarts := <-restartsDone
	l.leaderless = killer.leaderless

	o, bad, err := l.converge(ctx, 3*time.Minute)
	if err != nil {
		t.Fatalf("reading the outcome: %v", err)
	}
	converged := time.Since(began)
	preemptedGroups, err := l.preemptedGroups(ctx)
	if err != nil {
		t.Fatalf("reading the preempted groups: %v", err)
	}
	for _, name := range groups.seenPreempted() {
		if !slices.Contains(preemptedGroups, name) {
			preemptedGroups = append(preemptedGroups, name)
		}
	}
	decisions, victims, badDecisions := groups.check(l)
	evictedGroups, gaveUp := l.evictedGangs()
	r := report{
		pods: l.pods(), gangs: len(l.gangs), succeeded: o.succeeded, failed: o.failed,
		deletes: l.deletes.Load(), retries: l.retries.Load(), checks: l.checks.Load(),
		preemptedGroups: len(preemptedGroups), evictedGroups: len(evictedGroups), preemptedPods: o.preempted,
		decisions: decisions, victims: victims,
		gangRestarts: l.restarts.Load(), staleDeletes: l.staleDeletes.Load(), gaveUp: gaveUp, evictedSucceeded: len(o.evictedSucceeded), neverBound: o.neverBound, remarked: o.remarked, otherDisruptions: l.disruptionCounts(),
		created: created, finished: finished, converged: converged,
		killer: killer, restarts: restarts,
	}
	r.log(t)
	var schedulerEvents []string
	if len(l.disruptedBy(corev1.PodReasonPreemptionByScheduler)) > 0 {
		if schedulerEvents, err = l.schedulerPreemptions(ctx, o.names); err != nil {
			t.Logf("reading kube-scheduler's Preempted events: %v", err)
		}
	}
	var short []string
	for _, g := range l.gangs {
		if why := g.short.Load(); why != nil {
			short = append(short, *why)
		}
	}
	l.ending.Store(true)
	deleting := time.Now()
	stuck, err := l.deleteAll(ctx, 2*time.Minute)
	if err != nil {
		t.Fatalf("deleting the pods: %v", err)
	}
	t.Logf("deleted every pod: %d left after %s", len(stuck), time.Since(deleting).Round(time.Second))
	badAfterDelete, err := l.mismatches(ctx, o.byGroup, o.notes)
	if err != nil {
		t.Fatalf("reading the groups after their pods were deleted: %v", err)
	}

	if len(short) > 0 {
		t.Errorf("%d gangs were released before all their pods (of the first generation, or of a restart after preemption) existed: %s", len(short), first(short))
	}
	// The load mixes priorities on nodes that cannot run it all at once, so
	// gangs of higher priority must have preempted some: a run without any
	// preemption proves nothing about it, whatever else it passed.
	switch {
	case len(preemptedGroups) == 0:
		t.Errorf("no preemption happened: no group showed the Preempted condition, though %s gangs shared nodes too small for the load; "+
			"either the load no longer fills the cluster or gangs no longer preempt, and the run proves nothing about preemption", l.classMix())
	case o.preempted == 0:
		t.Errorf("%d groups were preempted, but no pod was evicted by Muster's preemption (none ended Failed with DisruptionTarget reason %s): "+
			"their released pods ran on, on room that was given to their preemptors", len(preemptedGroups), scheduling.ReasonPreemptionByMuster)
	}
	if notMarked := missing(evictedGroups, preemptedGroups); len(notMarked) > 0 {
		t.Errorf("%d groups had pods evicted by Muster's preemption but do not show the Preempted condition: %s", len(notMarked), first(notMarked))
	}
	if len(badDecisions) > 0 {
		t.Errorf("%d preemptions recorded priorities that differ from the gangs' classes, or chose victims not of strictly lower priority: %s", len(badDecisions), first(badDecisions))
	}
	if len(o.ranOn) > 0 {
		t.Errorf("%d pods kept running after another pod of their gang was preempted (by Muster or by kube-scheduler), leaving it partly running: %s", len(o.ranOn), first(o.ranOn))
	}
	if len(o.topEvicted) > 0 {
		t.Errorf("%d pods of the highest priority were evicted by Muster's preemption, which only evicts strictly lower priorities: %s", len(o.topEvicted), first(o.topEvicted))
	}
	// kube-scheduler may still preempt on its own, pod by pod, where its
	// view of a node is ahead of Muster's; Muster then preempts the rest of
	// that gang whole (step 6b). o.ranOn above holds such a gang to the
	// same rule as Muster's own victims.
	if byScheduler := l.disruptedBy(corev1.PodReasonPreemptionByScheduler); len(byScheduler) > 0 {
		t.Logf("kube-scheduler preempted %d pods, and Muster preempted the rest of their gangs: %s; its events: %s", len(byScheduler), first(byScheduler), first(schedulerEvents))
	}
	for _, err := range l.errors() {
		t.Errorf("%v", err)
	}
	if len(o.unfinished) > 0 {
		t.Errorf("%d pods never finished: %s", len(o.unfinished), first(o.unfinished))
	}
	if len(bad) > 0 {
		t.Errorf("%d groups' counts differ from what their pods did: %s", len(bad), first(bad))
	}
	if len(o.tracked) > 0 {
		t.Errorf("%d finished pods still carry Muster's finalizer: %s", len(o.tracked), first(o.tracked))
	}
	if len(stuck) > 0 {
		t.Errorf("%d pods were stuck Terminating 2m after deletion: %s", len(stuck), first(stuck))
	}
	if len(badAfterDelete) > 0 {
		t.Errorf("after the pods were deleted, %d groups' counts changed: %s", len(badAfterDelete), first(badAfterDelete))
	}
	if killer.kills < 3 {
		t.Errorf("R1 killed the leader %d times, want at least 3 for the run to mean anything", killer.kills)
	}
	for _, rs := range restartSchedule {
		i := slices.IndexFunc(restarts, func(r restart) bool { return r.component == rs.component })
		switch {
		case i < 0:
			t.Errorf("R2 never restarted %s", rs.component)
		case restarts[i].err != nil:
			t.Errorf("restarting %s: %v", rs.component, restarts[i].err)
		case restarts[i].sinceStart() > apiAnswerLimit:
			t.Errorf("after %s restarted, the APIs answered in %s, want within %s", rs.component, restarts[i].sinceStart().Round(time.Millisecond), apiAnswerLimit)
		}
	}
	if exited := env.Exited(); len(exited) > 0 {
		t.Errorf("processes exited on their own: %v", exited)
	}
}

// watch runs an informer on the load's pods that feeds observe, and returns
// a func that stops it.
func (l *load) watch(ctx context.Context) func() {
	factory := informers.NewSharedInformerFactoryWithOptions(clients.kube, 0, informers.WithNamespace(l.ns))
	informer := factory.Core().V1().Pods().Informer()
	handle := func(obj any) {
		if p, ok := obj.(*corev1.Pod); ok {
			l.observe(ctx, p)
		}
	}
	_, _ = informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	})
	stop := make(chan struct{})
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	return func() { close(stop); factory.Shutdown() }
}

// waitFinished waits until every pod of the load has ended, and gives up
// when none has ended for stallAfter.
func (l *load) waitFinished(ctx context.Context) error {
	const stallAfter = 3 * time.Minute
	total := int64(l.pods())
	last, progress := l.finished.Load(), time.Now()
	for l.finished.Load() < total {
		if n := l.finished.Load(); n != last {
			last, progress = n, time.Now()
		}
		if time.Since(progress) > stallAfter {
			return fmt.Errorf("no pod finished for %s: %d of %d pods finished", stallAfter, last, total)
		}
		select {
		case <-l.wake:
		case <-time.After(time.Second):
		case <-ctx.Done():
			return fmt.Errorf("%w: %d of %d pods finished", ctx.Err(), l.finished.Load(), total)
		}
	}
	return nil
}

// diagnose logs the groups that still have unfinished pods: their pods'
// state and the group's status, so that a failed run says why.
func (l *load) diagnose(ctx context.Context, t *testing.T) {
	list, err := clients.kube.CoreV1().Pods(l.ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("diagnose: listing pods: %v", err)
		return
	}
	stuck := map[string][]string{}
	var order []string
	for _, p := range list.Items {
		if scheduling.IsTerminal(&p) {
			continue
		}
		g := p.Labels[scheduling.PodGroupLabel]
		if _, ok := stuck[g]; !ok {
			order = append(order, g)
		}
		stuck[g] = append(stuck[g], fmt.Sprintf("%s %s gated=%v node=%q created=%s", p.Name, p.Status.Phase, scheduling.HasGate(&p), p.Spec.NodeName, p.CreationTimestamp.Format(time.RFC3339)))
	}
	for i, g := range order {
		if i == 10 {
			t.Logf("diagnose: and %d more groups", len(order)-i)
			break
		}
		pg, err := clients.muster.SchedulingV1alpha1().PodGroups(l.ns).Get(ctx, g, metav1.GetOptions{})
		if err != nil {
			t.Logf("diagnose: group %s: %v; unfinished pods %v", g, err, stuck[g])
			continue
		}
		status, _ := json.Marshal(pg.Status)
		t.Logf("diagnose: group %s: unfinished pods %v; status %s", g, stuck[g], status)
	}
}

// logProgress logs how many pods were created and finished every 15s
// until ctx ends.
func (l *load) logProgress(ctx context.Context, t *testing.T) {
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			t.Logf("%d of %d pods created, %d finished", l.created.Load(), l.pods(), l.finished.Load())
		case <-ctx.Done():
			return
		}
	}
}

// first lists up to 5 items of a failure.
func first(items []string) string {
	if len(items) > 5 {
		return strings.Join(items[:5], "; ") + fmt.Sprintf("; and %d more", len(items)-5)
	}
	return strings.Join(items, "; ")
}

package abuse

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/test/cluster"
)

// The well-behaved tenant's gang: 3 pods of 8 cpu that run for a second.
// On the 4 nodes of 32 cpu, 11 places of 10 cpu held elsewhere leave no
// room for it: the confirmed starvation.
const (
	gangSize = 3
	gangCPU  = "8"
	gangRun  = "1s"
)

// releases records when each pod of a namespace was first seen without
// Muster's gate, from a watch, so that a release is timed by what a client
// sees and not by polling.
type releases struct {
	mu       sync.Mutex
	released map[string]time.Time
	changed  chan struct{}
}

func watchReleases(ctx context.Context, ns string) (*releases, error) {
	r := &releases{released: map[string]time.Time{}, changed: make(chan struct{}, 1)}
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	see := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || scheduling.HasGate(p) {
			return
		}
		r.mu.Lock()
		if _, seen := r.released[p.Name]; !seen {
			r.released[p.Name] = time.Now()
		}
		r.mu.Unlock()
		select {
		case r.changed <- struct{}{}:
		default:
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    see,
		UpdateFunc: func(_, obj any) { see(obj) },
	}); err != nil {
		return nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("pods of %s never synced", ns)
	}
	return r, nil
}

// waitReleased waits until every named pod is released, and returns when
// the last one was.
func (r *releases) waitReleased(ctx context.Context, names []string) (time.Time, error) {
	for {
		r.mu.Lock()
		var last time.Time
		all := true
		for _, n := range names {
			at, ok := r.released[n]
			if !ok {
				all = false
				break
			}
			if at.After(last) {
				last = at
			}
		}
		r.mu.Unlock()
		if all {
			return last, nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("pods %v not all released: %w", names, ctx.Err())
		case <-r.changed:
		case <-time.After(time.Second):
		}
	}
}

// gangPod is one pod of the well-behaved tenant's gang, whose group Muster
// creates from its min-count annotation, as a framework that only creates
// pods does.
func gangPod(ns, group string, i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%d", group, i), Namespace: ns,
			Labels: map[string]string{scheduling.PodGroupLabel: group},
			Annotations: map[string]string{
				scheduling.MinCountAnnotation: fmt.Sprint(gangSize),
				cluster.RunForAnnotation:      gangRun,
			},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(gangCPU)}},
			}},
			TerminationGracePeriodSeconds: new(int64(1)),
		},
	}
}

// gangRun is one timed gang of the well-behaved tenant.
type gangResult struct {
	group string
	// latency is from the moment its last pod was created to the moment
	// its last pod was seen released.
	latency time.Duration
	// failedCreates are the pod creates the cluster refused.
	failedCreates []error
}

// runGang creates a gang's pods at once and times its release.
func runGang(ctx context.Context, good tenant, r *releases, group string) gangResult {
	res := gangResult{group: group}
	var mu sync.Mutex
	var lastCreated time.Time
	var wg sync.WaitGroup
	names := make([]string, gangSize)
	for i := range gangSize {
		p := gangPod(good.ns, group, i)
		names[i] = p.Name
		wg.Go(func() {
			_, err := good.client.CoreV1().Pods(good.ns).Create(ctx, p, metav1.CreateOptions{})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				res.failedCreates = append(res.failedCreates, fmt.Errorf("creating pod %s: %w", p.Name, err))
				return
			}
			if now := time.Now(); now.After(lastCreated) {
				lastCreated = now
			}
		})
	}
	wg.Wait()
	if len(res.failedCreates) > 0 {
		return res
	}
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	last, err := r.waitReleased(wctx, names)
	if err != nil {
		res.failedCreates = append(res.failedCreates, err)
		return res
	}
	res.latency = max(0, last.Sub(lastCreated))
	return res
}

// runGangs runs n gangs one after another, each once the previous has
// finished, so that each finds the cluster's nodes free, and returns their
// results.
func runGangs(ctx context.Context, good tenant, r *releases, phase string, n int) []gangResult {
	out := make([]gangResult, 0, n)
	for i := range n {
		res := runGang(ctx, good, r, fmt.Sprintf("%s-%d", phase, i))
		out = append(out, res)
		if len(res.failedCreates) > 0 {
			continue
		}
		_ = waitGroupSucceeded(ctx, good.ns, res.group)
	}
	return out
}

// waitGroupSucceeded waits until the group's pods have all succeeded, so
// that the next gang meets free nodes.
func waitGroupSucceeded(ctx context.Context, ns, group string) error {
	return waitUntil(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		pg, err := muster.SchedulingV1alpha1().PodGroups(ns).Get(ctx, group, metav1.GetOptions{})
		return err == nil && pg.Status.Succeeded >= gangSize, nil
	})
}

func latencies(rs []gangResult) []time.Duration {
	var out []time.Duration
	for _, r := range rs {
		if len(r.failedCreates) == 0 {
			out = append(out, r.latency)
		}
	}
	slices.Sort(out)
	return out
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[len(ds)/2]
}

// waitUntil polls cond every 200ms for at most timeout.
func waitUntil(ctx context.Context, timeout time.Duration, cond wait.ConditionWithContextFunc) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, cond)
}

package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/client-go/util/workqueue"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	"github.com/muster-dev/muster/test/cluster"
)

// Names the driver gives its own objects.
const (
	holdGate      = "perf.muster.dev/hold"
	holdFinalizer = "perf.muster.dev/hold"
	rawNamespace  = "perf-raw"
	burstNS       = "perf-burst"
	rateNS        = "perf-rate"
)

// driver runs the phases on one cluster.
type driver struct {
	c      *cluster.Cluster
	cfg    config
	kube   kubernetes.Interface
	muster versioned.Interface
	rec    *recorder
	cpu    *cpuMeter
	stopCh chan struct{}
	// retries counts creates retried after a server-side failure.
	retries atomic.Int64
}

// maxRetries bounds the retries of one failed create.
const maxRetries = 5

// retriable reports whether a failed request may succeed when sent again:
// the server failed (a webhook call timed out), not the request.
func retriable(err error) bool {
	return apierrors.IsInternalError(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err)
}

// newDriver builds clients that the driver's own side never throttles, and
// a pod informer that records every pod's steps.
func newDriver(ctx context.Context, c *cluster.Cluster, cfg config) (*driver, error) {
	rc := rest.CopyConfig(c.Config)
	rc.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	kube, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	muster, err := versioned.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	d := &driver{c: c, cfg: cfg, kube: kube, muster: muster,
		rec: newRecorder(scheduling.TrackingFinalizer, holdFinalizer), stopCh: make(chan struct{})}
	for _, ns := range []string{rawNamespace, burstNS, rateNS} {
		if err := d.createNamespace(ctx, ns); err != nil {
			return nil, err
		}
	}
	factory := informers.NewSharedInformerFactory(kube, 0)
	pods := factory.Core().V1().Pods().Informer()
	if _, err := pods.AddEventHandler(d.rec.handler()); err != nil {
		return nil, err
	}
	factory.Start(d.stopCh)
	if !cache.WaitForCacheSync(ctx.Done(), pods.HasSynced) {
		return nil, fmt.Errorf("pod informer did not sync")
	}
	d.cpu = newCPUMeter(c)
	return d, nil
}

func (d *driver) stop() { close(d.stopCh) }

func (d *driver) createNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := d.kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s: %w", name, err)
	}
	// Pods are refused until the namespace's default service account exists.
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := d.kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

// newPod is the one pod shape of every phase: small requests, gone at once
// when deleted, and a run time the kwok stages read (a duration, or an
// RFC 3339 instant at which it finishes).
func newPod(ns, name, group, runFor string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{},
			Annotations: map[string]string{cluster.RunForAnnotation: runFor}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("10m"),
					corev1.ResourceMemory: resource.MustParse("16Mi"),
				}},
			}},
			TerminationGracePeriodSeconds: new(int64),
		},
	}
	if group != "" {
		p.Labels[scheduling.PodGroupLabel] = group
	}
	return p
}

// labelledPod is a pod of gang group, prepared as Muster's webhook would
// prepare it when --prepared is set.
func (d *driver) labelledPod(ns, name, group, runFor string) *corev1.Pod {
	p := newPod(ns, name, group, runFor)
	if d.cfg.prepared {
		p.Labels[scheduling.ManagedLabel] = "true"
		p.Finalizers = []string{scheduling.TrackingFinalizer}
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: scheduling.AdmissionGate}}
	}
	return p
}

// createPods creates the pods with the driver's concurrency and returns
// their UIDs and how long it took. The recorder learns each create's time.
func (d *driver) createPods(ctx context.Context, pods []*corev1.Pod) ([]types.UID, time.Duration, error) {
	uids := make([]types.UID, len(pods))
	start := time.Now()
	err := d.parallel(ctx, len(pods), func(ctx context.Context, i int) error {
		created, err := d.kube.CoreV1().Pods(pods[i].Namespace).Create(ctx, pods[i], metav1.CreateOptions{})
		// A framework retries what the server failed to do, such as a
		// webhook call that timed out; the table counts these retries.
		for try := 1; err != nil && try <= maxRetries && retriable(err); try++ {
			d.retries.Add(1)
			time.Sleep(100 * time.Millisecond)
			created, err = d.kube.CoreV1().Pods(pods[i].Namespace).Create(ctx, pods[i], metav1.CreateOptions{})
		}
		if err != nil {
			return fmt.Errorf("creating pod %s/%s: %w", pods[i].Namespace, pods[i].Name, err)
		}
		uids[i] = created.UID
		d.rec.created(created.UID, time.Now())
		return nil
	})
	return uids, time.Since(start), err
}

// parallel runs n pieces of work, cfg.concurrency at a time, and returns
// the first error.
func (d *driver) parallel(ctx context.Context, n int, work func(ctx context.Context, i int) error) error {
	return parallelN(ctx, d.cfg.concurrency, n, work)
}

// parallelN runs n pieces of work, workers at a time, and returns the
// first error; the others are cancelled by it.
func parallelN(ctx context.Context, workers, n int, work func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		once  sync.Once
		first error
	)
	workqueue.ParallelizeUntil(ctx, workers, n, func(i int) {
		if err := work(ctx, i); err != nil {
			once.Do(func() { first = err; cancel() })
		}
	})
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}

// waitPods waits until every pod satisfies done, logging progress.
func (d *driver) waitPods(ctx context.Context, what string, uids []types.UID, within time.Duration, done func(podTimes) bool) error {
	last := time.Now()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, within, true, func(context.Context) (bool, error) {
		n := d.rec.count(uids, done)
		if time.Since(last) > 10*time.Second {
			logf("  %s: %d/%d", what, n, len(uids))
			last = time.Now()
		}
		return n == len(uids), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for pods %s: %d/%d: %w", what, d.rec.count(uids, done), len(uids), err)
	}
	return nil
}

// deleteAll deletes every pod of ns and waits until they are gone. Pods
// are deleted one call each, 32 at a time: one DeleteCollection of 10,000
// pods outlasts kube-apiserver's request timeout and fails half done.
func (d *driver) deleteAll(ctx context.Context, ns string) error {
	zero := int64(0)
	var (
		mu   sync.Mutex
		last error
	)
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := d.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, nil
		}
		var live []string
		for _, p := range list.Items {
			// Pods being deleted stay listed until the controller has
			// counted them and taken its finalizer off.
			if p.DeletionTimestamp == nil {
				live = append(live, p.Name)
			}
		}
		workqueue.ParallelizeUntil(ctx, 32, len(live), func(i int) {
			err := d.kube.CoreV1().Pods(ns).Delete(ctx, live[i], metav1.DeleteOptions{GracePeriodSeconds: &zero})
			if err != nil && !apierrors.IsNotFound(err) {
				mu.Lock()
				last = err
				mu.Unlock()
			}
		})
		return len(list.Items) == 0, nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("deleting the pods of %s: %w (last: %v)", ns, err, last)
	}
	return err
}

// Predicates on a pod's recorded steps.
func isUngated(t podTimes) bool   { return !t.ungated.IsZero() }
func isFinished(t podTimes) bool  { return !t.finished.IsZero() }
func isFreed(t podTimes) bool     { return !t.freed.IsZero() }
func isAccounted(t podTimes) bool { return isFinished(t) && isFreed(t) }

// sleep waits for d, or returns ctx's error once it ends first.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

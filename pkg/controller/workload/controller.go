// Package workload keeps a Workload's status light: one condition and the
// generation the controller has seen.
package workload

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	informers "github.com/muster-dev/muster/pkg/generated/informers/externalversions/scheduling/v1alpha1"
	listers "github.com/muster-dev/muster/pkg/generated/listers/scheduling/v1alpha1"
)

// ConditionAccepted is True once the controller has seen the Workload's
// current generation.
const ConditionAccepted = "Accepted"

// Controller writes Workload status.
type Controller struct {
	client versioned.Interface
	lister listers.WorkloadLister
	synced cache.InformerSynced
	queue  workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller on a Workload informer.
func New(client versioned.Interface, workloads informers.WorkloadInformer) (*Controller, error) {
	c := &Controller{
		client: client,
		lister: workloads.Lister(),
		synced: workloads.Informer().HasSynced,
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "workload"}),
	}
	enqueue := func(obj interface{}) {
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := workloads.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj interface{}) { enqueue(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watching workloads: %w", err)
	}
	return c, nil
}

// Run syncs Workloads with one worker until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	var wg sync.WaitGroup
	// Shutting the queue down is what ends the worker; then wait for it.
	defer func() {
		c.queue.ShutDown()
		wg.Wait()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return
	}
	wg.Go(func() {
		wait.UntilWithContext(ctx, func(ctx context.Context) {
			for c.processNext(ctx) {
			}
		}, time.Second)
	})
	<-ctx.Done()
}

func (c *Controller) processNext(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := recovering(ctx, key, c.sync); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Syncing Workload", "key", key)
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

// sync records that the current generation was seen.
// recovering runs sync for key and turns a panic into an error, logged
// with its stack: the worker goes on with other Workloads and the key is
// retried with backoff, rather than one object's input taking the
// controller (and its leader's Lease) down.
func recovering(ctx context.Context, key string, sync func(context.Context, string) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			klog.FromContext(ctx).Error(nil, "Recovered from a panic syncing Workload", "key", key, "panic", r, "stack", string(debug.Stack()))
			err = fmt.Errorf("sync of Workload %s panicked: %v", key, r)
		}
	}()
	return sync(ctx, key)
}

func (c *Controller) sync(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	w, err := c.lister.Workloads(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	next := w.DeepCopy()
	next.Status.ObservedGeneration = w.Generation
	meta.SetStatusCondition(&next.Status.Conditions, metav1.Condition{
		Type:               ConditionAccepted,
		Status:             metav1.ConditionTrue,
		Reason:             "Observed",
		Message:            fmt.Sprintf("%d pod-group templates", len(w.Spec.PodGroupTemplates)),
		ObservedGeneration: w.Generation,
		LastTransitionTime: metav1.Now(),
	})
	if equalStatus(&w.Status, &next.Status) {
		return nil
	}
	_, err = c.client.SchedulingV1alpha1().Workloads(ns).UpdateStatus(ctx, next, metav1.UpdateOptions{FieldManager: scheduling.ControllerName})
	if err != nil {
		return fmt.Errorf("writing status of Workload %s: %w", key, err)
	}
	return nil
}

func equalStatus(a, b *v1alpha1.WorkloadStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration || len(a.Conditions) != len(b.Conditions) {
		return false
	}
	for i := range a.Conditions {
		x, y := a.Conditions[i], b.Conditions[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}

// Package podgroup is Muster's gang-admission controller. For each PodGroup
// it classifies the group's pods, admits the gang by removing the admission gate
// from all its pods at once, and counts every finished pod exactly once with
// the tracking finalizer (KEP-2307). docs/controller.md explains the
// algorithm and why it is crash-safe.
package podgroup

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	appsinformers "k8s.io/client-go/informers/apps/v1"
	batchinformers "k8s.io/client-go/informers/batch/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/admission"
	"github.com/muster-dev/muster/pkg/controller/autoscaling"
	"github.com/muster-dev/muster/pkg/controller/instance"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	informers "github.com/muster-dev/muster/pkg/generated/informers/externalversions/scheduling/v1alpha1"
	listers "github.com/muster-dev/muster/pkg/generated/listers/scheduling/v1alpha1"
)

// Controller admits and accounts PodGroups.
type Controller struct {
	cfg    Config
	kube   kubernetes.Interface
	muster versioned.Interface

	podIndexer cache.Indexer
	pgLister   listers.PodGroupLister
	// pgIndexer finds the groups a Job or StatefulSet owns (OwnerIndex).
	pgIndexer cache.Indexer
	nsLister  corelisters.NamespaceLister
	jobLister batchlisters.JobLister
	stsLister appslisters.StatefulSetLister
	// quotaLister reads the namespaces' ResourceQuotas; nil checks none.
	quotaLister corelisters.ResourceQuotaLister
	nsSelector  labels.Selector
	synced      []cache.InformerSynced

	queue    workqueue.TypedRateLimitingInterface[scheduling.GroupKey]
	recorder record.EventRecorder
	// memory is what the controller remembers of each group between its
	// syncs (memory.go): expectations, its batch, its last status write and
	// the last one refused.
	memory *groupMemories
	clock  clock.Clock
	// created bounds the groups created from pods, per namespace: their
	// number and their rate (createdbound.go).
	created *createdGroups

	mu sync.Mutex
	// warned remembers, per pod, the reasons of the one-off events it was
	// sent, so that syncs do not repeat them. A pod's entry goes with the pod.
	warned map[types.UID]sets.Set[string]

	// admitter is the admission mode, --admission (admitter.go).
	admitter admission.Mode
	// requester asks an autoscaler for room (--autoscaling); nil asks none.
	requester autoscaling.Requester
	// owners reads the owners of pods named by instance; nil reads none.
	owners instance.Reader
	// metrics are this controller's own, served from registry while Run
	// runs (metrics.go): built by New when the replica starts leading, gone
	// from /metrics when it stops.
	metrics  *controllerMetrics
	registry metricsRegistry
}

// Informers are the shared informers a Controller reads. New installs its
// indexes and handlers, so none may have started yet.
type Informers struct {
	// Pods must be limited to pods that carry the group label
	// (PodListOptions) and should be trimmed by TransformPod.
	Pods       coreinformers.PodInformer
	Namespaces coreinformers.NamespaceInformer
	PodGroups  informers.PodGroupInformer
	// Nodes feed capacity-aware admission; nil with --admission=count.
	Nodes coreinformers.NodeInformer
	// Jobs and StatefulSets, trimmed by TransformOwner, are read for the
	// pods they control: a running Job keeps its group from failing (step
	// 12), an OrderedReady StatefulSet is reported (step 6).
	Jobs         batchinformers.JobInformer
	StatefulSets appsinformers.StatefulSetInformer
	// ResourceQuotas bound the places a gang reserves for pods created
	// later (reservationquota.go); nil checks none.
	ResourceQuotas coreinformers.ResourceQuotaInformer
	// Requester is how capacity-aware admission asks an autoscaler for
	// room for gangs that do not fit the nodes there are (--autoscaling);
	// nil asks none. It runs its own informer.
	Requester autoscaling.Requester
	// Owners reads the owners of a pod whose group is named after its
	// workload instance (instance.go), which is not cached: it is read
	// once per group created. Nil reads none: such a group is owned by
	// the pod's controller, and sized only by the min-count annotation.
	Owners instance.Reader
}

// New builds a controller over inf.
func New(cfg Config, kube kubernetes.Interface, muster versioned.Interface, inf Informers, recorder record.EventRecorder) (*Controller, error) {
	sel, err := labels.Parse(cfg.NamespaceSelector)
	if err != nil {
		return nil, fmt.Errorf("parsing namespace selector: %w", err)
	}
	pods, namespaces, podGroups, nodes := inf.Pods, inf.Namespaces, inf.PodGroups, inf.Nodes
	if pods == nil || namespaces == nil || podGroups == nil || inf.Jobs == nil || inf.StatefulSets == nil {
		return nil, fmt.Errorf("the controller needs pod, namespace, PodGroup, Job and StatefulSet informers")
	}
	if err := addPodIndexer(pods.Informer()); err != nil {
		return nil, fmt.Errorf("indexing pods by group: %w", err)
	}
	if err := addOwnerIndexer(pods.Informer()); err != nil {
		return nil, fmt.Errorf("indexing pods by owner: %w", err)
	}
	if err := addGroupOwnerIndexer(podGroups.Informer()); err != nil {
		return nil, fmt.Errorf("indexing PodGroups by owner: %w", err)
	}
	if err := addNamespaceIndexer(podGroups.Informer()); err != nil {
		return nil, fmt.Errorf("indexing PodGroups by namespace: %w", err)
	}
	c := &Controller{
		cfg:        cfg,
		kube:       kube,
		muster:     muster,
		podIndexer: pods.Informer().GetIndexer(),
		pgLister:   podGroups.Lister(),
		pgIndexer:  podGroups.Informer().GetIndexer(),
		nsLister:   namespaces.Lister(),
		jobLister:  inf.Jobs.Lister(),
		stsLister:  inf.StatefulSets.Lister(),
		nsSelector: sel,
		synced:     []cache.InformerSynced{pods.Informer().HasSynced, namespaces.Informer().HasSynced, podGroups.Informer().HasSynced},
		queue:      newQueue(), // fairqueue.go
		recorder:   recorder,
		memory:     newGroupMemories(),
		created:    newCreatedGroups(cfg),
		clock:      clock.RealClock{},
		warned:     map[types.UID]sets.Set[string]{},
		requester:  inf.Requester,
		owners:     inf.Owners,
		metrics:    newControllerMetrics(),
		registry:   legacyRegistry{},
	}
	adm, admSynced, err := c.newAdmitter(nodes)
	if err != nil {
		return nil, err
	}
	c.admitter = adm
	c.synced = append(c.synced, admSynced...)
	if inf.ResourceQuotas != nil {
		c.quotaLister = inf.ResourceQuotas.Lister()
		c.synced = append(c.synced, inf.ResourceQuotas.Informer().HasSynced)
	}
	// The handlers' own HasSynced, not only the informers', gate Run: the
	// capacity tracker is fed by the handlers, and the first admission cycle
	// must see every reservation that already exists.
	podReg, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	})
	if err != nil {
		return nil, fmt.Errorf("watching pods: %w", err)
	}
	c.synced = append(c.synced, podReg.HasSynced)
	if _, err := namespaces.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { c.namespaceChanged(nil, obj) },
		UpdateFunc: c.namespaceChanged,
	}); err != nil {
		return nil, fmt.Errorf("watching namespaces: %w", err)
	}
	c.synced = append(c.synced, inf.Jobs.Informer().HasSynced, inf.StatefulSets.Informer().HasSynced)
	// A Job's or StatefulSet's event requeues the groups of its own pods
	// (OwnerIndex), never all groups.
	if _, err := inf.Jobs.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addOwner,
		UpdateFunc: c.updateJob,
		DeleteFunc: c.deleteOwner,
	}); err != nil {
		return nil, fmt.Errorf("watching jobs: %w", err)
	}
	if _, err := inf.StatefulSets.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addOwner,
		UpdateFunc: c.updateStatefulSet,
		DeleteFunc: c.deleteOwner,
	}); err != nil {
		return nil, fmt.Errorf("watching statefulsets: %w", err)
	}
	pgReg, err := podGroups.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPodGroup,
		UpdateFunc: func(_, obj interface{}) { c.addPodGroup(obj) },
		DeleteFunc: c.deletePodGroup,
	})
	if err != nil {
		return nil, fmt.Errorf("watching podgroups: %w", err)
	}
	c.synced = append(c.synced, pgReg.HasSynced)
	return c, nil
}

// Run syncs groups with the given number of workers until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer utilruntime.HandleCrash()
	if err := c.metrics.register(c.registry); err != nil {
		return fmt.Errorf("serving the controller's metrics: %w", err)
	}
	// Deferred first, so run last: once the workers have stopped, the
	// metrics leave /metrics with the leadership that made them true.
	defer c.metrics.unregister(c.registry)
	var wg sync.WaitGroup
	// Shutting the queue down is what ends the workers; then wait for them.
	defer func() {
		c.queue.ShutDown()
		wg.Wait()
	}()
	logger := klog.FromContext(ctx)
	logger.Info("Starting PodGroup controller", "workers", workers, "admission", c.cfg.Admission)
	synced := make(chan struct{})
	c.admitter.Start(ctx, &wg, synced)
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("waiting for informer caches to sync: %w", ctx.Err())
	}
	close(synced)
	for range workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.runWorker, time.Second) })
	}
	<-ctx.Done()
	logger.Info("Stopping PodGroup controller")
	return nil
}

func (c *Controller) runWorker(ctx context.Context) {
	for c.processNextWorkItem(ctx) {
	}
}

// processNextWorkItem syncs one group. An error hands the key back to the
// queue with backoff; success forgets its backoff.
func (c *Controller) processNextWorkItem(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	start := c.clock.Now()
	requeueAfter, err := c.syncRecovering(ctx, key, c.sync)
	c.metrics.syncDuration.Observe(c.clock.Since(start).Seconds())
	if err != nil {
		if isStaleRead(err) {
			// Expected while the cache catches up with our own writes.
			klog.FromContext(ctx).V(3).Info("Retrying PodGroup after a stale read", "key", key, "err", err)
		} else {
			utilruntime.HandleErrorWithContext(ctx, err, "Syncing PodGroup", "key", key)
		}
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	if requeueAfter > 0 {
		c.queue.AddAfter(key, requeueAfter)
	}
	return true
}

// isStaleRead reports whether err only says that the sync worked from a
// cache older than the object: a conflict on write.
func isStaleRead(err error) bool {
	return apierrors.IsConflict(err)
}

// podsOf returns the pods labelled for a group, from the index.
func (c *Controller) podsOf(key scheduling.GroupKey) ([]*corev1.Pod, error) {
	objs, err := c.podIndexer.ByIndex(GroupIndex, key.String())
	if err != nil {
		return nil, fmt.Errorf("reading pod index: %w", err)
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		pods = append(pods, o.(*corev1.Pod))
	}
	return pods, nil
}

// managedNamespace reports whether Muster manages pods in the namespace.
func (c *Controller) managedNamespace(name string) bool {
	ns, err := c.nsLister.Get(name)
	if err != nil {
		return false
	}
	return c.nsSelector.Matches(labels.Set(ns.Labels))
}

// warnOnce records an event about a pod, by emit, unless the pod was
// already told about reason.
func (c *Controller) warnOnce(uid types.UID, reason string, emit func()) {
	c.mu.Lock()
	reasons := c.warned[uid]
	if reasons == nil {
		reasons = sets.New[string]()
		c.warned[uid] = reasons
	}
	done := reasons.Has(reason)
	reasons.Insert(reason)
	c.mu.Unlock()
	if !done {
		emit()
	}
}

// hasWarned reports whether the pod was told about reason.
func (c *Controller) hasWarned(uid types.UID, reason string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.warned[uid].Has(reason)
}

// forgetWarnings drops what a pod was told, when the pod goes.
func (c *Controller) forgetWarnings(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.warned, uid)
}

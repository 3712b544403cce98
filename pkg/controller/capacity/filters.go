package capacity

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	resourceinformers "k8s.io/client-go/informers/resource/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	resourceslicetracker "k8s.io/dynamic-resource-allocation/resourceslice/tracker"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	schedfw "k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultbinder"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/dynamicresources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/interpodaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodedeclaredfeatures"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodename"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeports"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeunschedulable"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodevolumelimits"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/queuesort"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumebinding"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumerestrictions"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/volumezone"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
	"k8s.io/kubernetes/pkg/scheduler/util/assumecache"
)

// DefaultSchedulerName is the profile whose rules placement runs. A pod
// that names another scheduler is placed by rules Muster cannot see.
const DefaultSchedulerName = corev1.DefaultSchedulerName

// filterPlugins are the plugins of kube-scheduler's default profile that
// decide where a pod may run, in the profile's order. Scoring plugins are
// left out: placement ranks nodes itself (placement.go). QueueSort and Bind
// are required by the framework and never called.
var filterPlugins = []string{
	queuesort.Name,
	defaultbinder.Name,
	nodename.Name,
	nodeunschedulable.Name,
	tainttoleration.Name,
	nodeaffinity.Name,
	nodeports.Name,
	noderesources.Name,
	volumerestrictions.Name,
	nodevolumelimits.CSIName,
	volumebinding.Name,
	volumezone.Name,
	podtopologyspread.Name,
	interpodaffinity.Name,
	dynamicresources.Name,
	nodedeclaredfeatures.Name,
}

// Filters runs kube-scheduler's own PreFilter, Filter and Reserve plugins of
// the default profile on a Snapshot, as cluster-autoscaler's simulator does.
// Reserve is what makes gang members see each other's volumes and devices:
// VolumeBinding assumes the PersistentVolumes it picks and DynamicResources
// marks the devices it picks as in flight, until Unreserve.
//
// One admission cycle uses the filters at a time (the controller's capacity
// queue is one goroutine); a Snapshot is bound to them by Use.
type Filters struct {
	// mu serializes the users of the framework's one lister: an admission
	// cycle (Admit) and Explain.
	mu     sync.Mutex
	fw     schedfw.Framework
	lister *sharedLister
	// devices is the DRA manager the plugins read, which counts the
	// devices of preemption's victims as free while a preemptor is placed
	// (victimdevices.go); nil without DRA.
	devices *victimDevices
	// DRA says whether DynamicResources runs: the cluster serves
	// resource.k8s.io/v1 (1.34 and later).
	DRA     bool
	factory informers.SharedInformerFactory
	synced  []cache.InformerSynced
	// namespaces is the lister InterPodAffinity reads namespaceSelectors
	// against; the idle judgement reads it too (judgeIdleKeeping).
	namespaces corelisters.NamespaceLister
}

var initMetrics sync.Once

// NewFilters builds the framework. Its informers watch only the small
// objects the filters read (namespaces, storage classes, volumes and claims,
// CSI objects, and with dra the DRA objects); pods and nodes come from the
// Snapshot. Call Start before the first cycle.
func NewFilters(ctx context.Context, kube kubernetes.Interface, dra bool) (*Filters, error) {
	// The framework records its own metrics; they are created, not
	// registered, so Muster's /metrics does not grow the scheduler's.
	initMetrics.Do(metrics.InitMetrics)

	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(dropManagedFields))
	// VolumeBinding and DynamicResources ask for pod and node informers that
	// only binding and requeueing read; placement never binds or requeues, so
	// they get informers that list nothing, and the cluster's pods are not
	// cached twice.
	factory.InformerFor(&corev1.Pod{}, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
		return emptyInformer(&corev1.Pod{}, &corev1.PodList{})
	})
	factory.InformerFor(&corev1.Node{}, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer {
		return emptyInformer(&corev1.Node{}, &corev1.NodeList{})
	})

	// The volume binder's and DRA's assume caches are fed by handlers on
	// these informers; Start waits for those handlers too, or the first
	// cycle could miss a volume or a claim that was listed.
	handlers := &handlerSync{}
	factory.InformerFor(&corev1.PersistentVolume{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return handlers.wrap(coreinformers.NewPersistentVolumeInformer(c, resync, cache.Indexers{}))
	})
	factory.InformerFor(&corev1.PersistentVolumeClaim{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
		return handlers.wrap(coreinformers.NewPersistentVolumeClaimInformer(c, metav1.NamespaceAll, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}))
	})
	if dra {
		factory.InformerFor(&resourcev1.ResourceClaim{}, func(c kubernetes.Interface, resync time.Duration) cache.SharedIndexInformer {
			return handlers.wrap(resourceinformers.NewResourceClaimInformer(c, metav1.NamespaceAll, resync, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}))
		})
	}

	profile, err := filterProfile(dra)
	if err != nil {
		return nil, err
	}
	lister := &sharedLister{}
	opts := []frameworkruntime.Option{
		frameworkruntime.WithClientSet(kube),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithSnapshotSharedLister(lister),
		frameworkruntime.WithLogger(klog.FromContext(ctx).WithName("placement")),
		frameworkruntime.WithSharedCSIManager(nodevolumelimits.NewCSIManager(factory.Storage().V1().CSINodes().Lister())),
	}
	var synced []cache.InformerSynced
	var devices *victimDevices
	if dra {
		claims := factory.Resource().V1().ResourceClaims().Informer()
		synced = append(synced, claims.HasSynced)
		slices, err := resourceslicetracker.StartTracker(ctx, resourceslicetracker.Options{
			SliceInformer: factory.Resource().V1().ResourceSlices(),
			KubeClient:    kube,
		})
		if err != nil {
			return nil, fmt.Errorf("tracking ResourceSlices: %w", err)
		}
		claimCache := assumecache.NewAssumeCache(klog.FromContext(ctx), claims, "ResourceClaim", "", nil)
		devices = newVictimDevices(dynamicresources.NewDRAManager(ctx, claimCache, slices, factory))
		opts = append(opts, frameworkruntime.WithSharedDRAManager(devices))
	}
	fw, err := frameworkruntime.NewFramework(ctx, plugins.NewInTreeRegistry(), profile, opts...)
	if err != nil {
		return nil, fmt.Errorf("building the scheduler's filters: %w", err)
	}
	return &Filters{fw: fw, lister: lister, devices: devices, DRA: dra, factory: factory, synced: append(synced, handlers.hasSynced),
		namespaces: factory.Core().V1().Namespaces().Lister()}, nil
}

// filterProfile is the default profile with only filterPlugins enabled. Its
// plugin arguments are the scheduler's defaults, except that
// PodTopologySpread gets no default constraints: the system defaults are
// ScheduleAnyway, which filtering ignores, and without them the plugin needs
// no informers of every Service, ReplicaSet and StatefulSet.
func filterProfile(dra bool) (*config.KubeSchedulerProfile, error) {
	cfg, err := latest.Default()
	if err != nil {
		return nil, fmt.Errorf("the scheduler's default configuration: %w", err)
	}
	def := cfg.Profiles[0]
	p := &config.KubeSchedulerProfile{SchedulerName: DefaultSchedulerName, Plugins: &config.Plugins{}}
	enabled := map[string]bool{}
	for _, name := range filterPlugins {
		if name == dynamicresources.Name && !dra {
			continue
		}
		enabled[name] = true
		p.Plugins.MultiPoint.Enabled = append(p.Plugins.MultiPoint.Enabled, config.Plugin{Name: name})
	}
	for _, pc := range def.PluginConfig {
		if !enabled[pc.Name] {
			continue
		}
		if args, ok := pc.Args.(*config.PodTopologySpreadArgs); ok {
			a := args.DeepCopy()
			a.DefaultingType = config.ListDefaulting
			a.DefaultConstraints = nil
			pc.Args = a
		}
		p.PluginConfig = append(p.PluginConfig, pc)
	}
	return p, nil
}

// Start starts the filters' informers and waits until they have listed.
func (f *Filters) Start(ctx context.Context) error {
	f.factory.Start(ctx.Done())
	for typ, ok := range f.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("placement's %v informer did not sync", typ)
		}
	}
	if !cache.WaitForCacheSync(ctx.Done(), f.synced...) {
		return fmt.Errorf("placement's volume and claim caches did not sync")
	}
	return nil
}

// Shutdown stops the informers Start started, once their context is done.
func (f *Filters) Shutdown() { f.factory.Shutdown() }

// DRAServed reports whether the cluster serves resource.k8s.io/v1, which
// the DynamicResources plugin of this release reads.
func DRAServed(kube kubernetes.Interface) (bool, error) {
	groups, err := kube.Discovery().ServerGroups()
	if err != nil {
		return false, fmt.Errorf("discovering API groups: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name != resourcev1.GroupName {
			continue
		}
		for _, v := range g.Versions {
			if v.Version == resourcev1.SchemeGroupVersion.Version {
				return true, nil
			}
		}
	}
	return false, nil
}

// dropManagedFields is the filters' informers' transform: no plugin reads
// managed fields, which are often most of a PersistentVolume's or a
// ResourceClaim's bytes.
func dropManagedFields(obj interface{}) (interface{}, error) {
	if o, ok := obj.(metav1.Object); ok {
		o.SetManagedFields(nil)
	}
	return obj, nil
}

// handlerSync records the handlers added to the informers it wraps, so
// that Start can wait until each has seen the first list.
type handlerSync struct {
	mu   sync.Mutex
	regs []cache.ResourceEventHandlerRegistration
}

func (h *handlerSync) wrap(i cache.SharedIndexInformer) cache.SharedIndexInformer {
	return &recordingInformer{SharedIndexInformer: i, sync: h}
}

func (h *handlerSync) hasSynced() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.regs {
		if !r.HasSynced() {
			return false
		}
	}
	return true
}

type recordingInformer struct {
	cache.SharedIndexInformer
	sync *handlerSync
}

func (r *recordingInformer) AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	reg, err := r.SharedIndexInformer.AddEventHandler(handler)
	if err == nil {
		r.sync.mu.Lock()
		r.sync.regs = append(r.sync.regs, reg)
		r.sync.mu.Unlock()
	}
	return reg, err
}

// emptyInformer is an informer of a type that placement never reads: it
// lists nothing and its watch never sends.
func emptyInformer(obj, list runtime.Object) cache.SharedIndexInformer {
	lw := &cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
			return list.DeepCopyObject(), nil
		},
		WatchFunc: func(metav1.ListOptions) (watch.Interface, error) {
			return watch.NewFake(), nil
		},
	}
	return cache.NewSharedIndexInformer(listOnly{lw}, obj, 0, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// listOnly tells the reflector to list rather than stream the initial
// list, which an empty watch never ends.
type listOnly struct{ *cache.ListWatch }

func (listOnly) IsWatchListSemanticsUnSupported() bool { return true }

// cycleState is one pod's PreFilter result, which Filter and Reserve read.
type cycleState struct {
	state  fwk.CycleState
	result *fwk.PreFilterResult
}

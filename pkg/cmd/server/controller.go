package server

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/apicalls"
	"github.com/muster-dev/muster/pkg/controller/capacity"
	"github.com/muster-dev/muster/pkg/controller/instance"
	"github.com/muster-dev/muster/pkg/controller/podgroup"
	"github.com/muster-dev/muster/pkg/controller/workload"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	musterinformers "github.com/muster-dev/muster/pkg/generated/informers/externalversions"
	"github.com/muster-dev/muster/pkg/visibility"
)

// ControllerOptions configure the embedded controller.
type ControllerOptions struct {
	podgroup.Config
	// Enabled runs the controller; standalone mode never runs it.
	Enabled bool
	// QPS and Burst bound the controller's requests to kube-apiserver.
	QPS   float32
	Burst int
	// ContentType is what the controller speaks to kube-apiserver, as
	// kube-controller-manager's --kube-api-content-type.
	ContentType string

	LeaderElect          bool
	LeaderElectNamespace string
	LeaseDuration        time.Duration
	RenewDeadline        time.Duration
	RetryPeriod          time.Duration

	// uuid makes this replica's Lease identity unique; identity is that
	// identity, with the address the other replicas reach it at
	// (visibility.Identity), once the views are built.
	uuid     string
	identity string
	// elector is the current term's, for the holder it observes.
	elector atomic.Pointer[leaderelection.LeaderElector]
	// views, when set, is told of each term's controller, which answers
	// the API's what-if and queue while it runs.
	views *visibility.Service
}

// NewControllerOptions returns the defaults.
func NewControllerOptions() *ControllerOptions {
	ns := os.Getenv("POD_NAMESPACE")
	if ns == "" {
		ns = scheduling.DefaultServerNamespace
	}
	cfg := podgroup.DefaultConfig()
	// The one selector that the webhooks and the policy binding are built
	// from too, wherever the server runs: the controller must never manage
	// namespaces the webhook does not prepare pods in, or the reverse.
	// Muster's own pods carry no group label, so its namespace needs no
	// exclusion of its own.
	cfg.NamespaceSelector = scheduling.DefaultNamespaceSelector
	return &ControllerOptions{
		Config:  cfg,
		Enabled: true,
		// Measured with make perf on 2 cores: at 50 queries a second the
		// controller, not kube-apiserver, capped releases at 50 pods a
		// second (0.49 of the raw gate-removal rate); at 1000 the cap was
		// kube-apiserver's own (0.67 of it, CPU-bound). A release costs
		// about 2.5 requests per pod, so 500 leaves client-side throttling
		// out of the way of any 2-core server; the API server's priority and
		// fairness still bounds what the controller may take.
		QPS:   500,
		Burst: 1000,
		// As kube-controller-manager: protobuf costs kube-apiserver and
		// the controller less CPU than JSON to encode and decode, for
		// every pod of the watch and every answer to a patch.
		ContentType:          runtime.ContentTypeProtobuf,
		LeaderElect:          true,
		LeaderElectNamespace: ns,
		LeaseDuration:        15 * time.Second,
		RenewDeadline:        10 * time.Second,
		RetryPeriod:          2 * time.Second,
		uuid:                 uuid.NewString(),
	}
}

// leaseHolder is the Lease's holder identity as this replica last observed
// it, "" before it has observed one.
func (o *ControllerOptions) leaseHolder() string {
	if le := o.elector.Load(); le != nil {
		return le.GetLeader()
	}
	return ""
}

// AddFlags registers the controller's flags.
func (o *ControllerOptions) AddFlags(fs *pflag.FlagSet) {
	o.Config.AddFlags(fs)
	fs.BoolVar(&o.Enabled, "controller", o.Enabled, "Run the embedded gang-admission controller (on the leader only). Standalone mode never runs it.")
	fs.Float32Var(&o.QPS, "controller-kube-api-qps", o.QPS, "Queries per second the controller may send to kube-apiserver.")
	fs.IntVar(&o.Burst, "controller-kube-api-burst", o.Burst, "Burst of requests the controller may send to kube-apiserver.")
	fs.StringVar(&o.ContentType, "controller-kube-api-content-type", o.ContentType,
		"Content type of the controller's requests to kube-apiserver: application/vnd.kubernetes.protobuf or application/json.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", o.LeaderElect,
		"Elect one leader among the replicas, with a Lease, to run the controller. Every replica serves the API either way.")
	fs.StringVar(&o.LeaderElectNamespace, "leader-elect-namespace", o.LeaderElectNamespace,
		"Namespace of the controller's Lease. Defaults to $POD_NAMESPACE, else muster-system.")
	fs.DurationVar(&o.LeaseDuration, "leader-elect-lease-duration", o.LeaseDuration, "How long a non-leader waits before taking over an unrenewed Lease.")
	fs.DurationVar(&o.RenewDeadline, "leader-elect-renew-deadline", o.RenewDeadline, "How long the leader retries renewing before it steps down.")
	fs.DurationVar(&o.RetryPeriod, "leader-elect-retry-period", o.RetryPeriod, "How often candidates try to acquire or renew the Lease.")
}

// Validate checks the controller options.
func (o *ControllerOptions) Validate() []error {
	if !o.Enabled {
		return nil
	}
	errs := o.Config.Validate()
	if o.ContentType != runtime.ContentTypeProtobuf && o.ContentType != runtime.ContentTypeJSON {
		errs = append(errs, fmt.Errorf("--controller-kube-api-content-type must be %s or %s, not %q", runtime.ContentTypeProtobuf, runtime.ContentTypeJSON, o.ContentType))
	}
	if o.LeaderElect && o.LeaseDuration <= o.RenewDeadline {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration (%s) must be greater than --leader-elect-renew-deadline (%s)", o.LeaseDuration, o.RenewDeadline))
	}
	return errs
}

// startController returns a post-start hook that runs the controller, on the
// leader only. Pods are read and written through the cluster's
// kube-apiserver; PodGroups through this server's loopback client, never
// through the aggregator.
func (o *ControllerOptions) startController(kubeConfig, loopback *rest.Config) genericapiserver.PostStartHookFunc {
	return func(hookCtx genericapiserver.PostStartHookContext) error {
		kcfg := rest.CopyConfig(kubeConfig)
		kcfg.QPS, kcfg.Burst = o.QPS, o.Burst
		kcfg.ContentType = o.ContentType
		if o.ContentType == runtime.ContentTypeProtobuf {
			kcfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
		}
		kcfg.Wrap(apicalls.Wrap("kube"))
		kube, err := kubernetes.NewForConfig(rest.AddUserAgent(kcfg, scheduling.ControllerName))
		if err != nil {
			return fmt.Errorf("creating kube client: %w", err)
		}
		mcfg := rest.CopyConfig(loopback)
		mcfg.Wrap(apicalls.Wrap("muster"))
		muster, err := versioned.NewForConfig(rest.AddUserAgent(mcfg, scheduling.ControllerName))
		if err != nil {
			return fmt.Errorf("creating loopback client: %w", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() { <-hookCtx.Done(); cancel() }()
		ctx = klog.NewContext(ctx, klog.FromContext(hookCtx).WithName("controller"))
		run := func(ctx context.Context) {
			if err := o.run(ctx, kube, muster, kcfg); err != nil {
				klog.FromContext(ctx).Error(err, "Controller stopped")
			}
		}
		if !o.LeaderElect {
			go run(ctx)
			return nil
		}
		go o.lead(ctx, kube, run)
		return nil
	}
}

// run builds the informers and the controller and runs it until ctx ends.
func (o *ControllerOptions) run(ctx context.Context, kube kubernetes.Interface, muster versioned.Interface, kcfg *rest.Config) error {
	podFactory := informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithTweakListOptions(podgroup.PodListOptions),
		informers.WithTransform(podgroup.TransformPod))
	pods := podFactory.Core().V1().Pods()
	nsFactory := informers.NewSharedInformerFactory(kube, 0)
	namespaces := nsFactory.Core().V1().Namespaces()
	musterFactory := musterinformers.NewSharedInformerFactory(muster, 0)
	podGroups := musterFactory.Scheduling().V1alpha1().PodGroups()
	wc, err := workload.New(muster, musterFactory.Scheduling().V1alpha1().Workloads())
	if err != nil {
		return err
	}

	recorder, broadcaster := newEventRecorder(kube, record.WithContext(ctx))
	defer broadcaster.Shutdown()

	// Capacity-aware admission reads nodes, trimmed to what placement needs.
	var nodes coreinformers.NodeInformer
	nodeFactory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(capacity.TrimNode))
	if o.Admission == podgroup.AdmissionCapacity {
		nodes = nodeFactory.Core().V1().Nodes()
	}
	// Jobs and StatefulSets of the whole cluster, trimmed to whether a Job
	// has ended and a StatefulSet's pod management policy: the controller
	// reads them only through the pods they control.
	ownerFactory := informers.NewSharedInformerFactoryWithOptions(kube, 0, informers.WithTransform(podgroup.TransformOwner))
	requester, err := o.newRequester(ctx, kube, kcfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(kcfg)
	if err != nil {
		return fmt.Errorf("creating dynamic client for workload owners: %w", err)
	}
	c, err := podgroup.New(o.Config, kube, muster, podgroup.Informers{
		Pods:         pods,
		Namespaces:   namespaces,
		PodGroups:    podGroups,
		Nodes:        nodes,
		Jobs:         ownerFactory.Batch().V1().Jobs(),
		StatefulSets: ownerFactory.Apps().V1().StatefulSets(),
		// Quotas are few and small; the namespace factory holds them whole.
		ResourceQuotas: nsFactory.Core().V1().ResourceQuotas(),
		Requester:      requester,
		Owners:         instance.NewDynamicReader(dyn, kube.Discovery()),
	}, recorder)
	if err != nil {
		return err
	}
	if o.views != nil {
		defer o.views.Lead(newLeaderView(c, musterFactory.Scheduling().V1alpha1().Workloads().Lister(), nsFactory.Scheduling().V1().PriorityClasses()))()
	}
	podFactory.Start(ctx.Done())
	ownerFactory.Start(ctx.Done())
	defer ownerFactory.Shutdown()
	nsFactory.Start(ctx.Done())
	nodeFactory.Start(ctx.Done())
	defer nodeFactory.Shutdown()
	musterFactory.Start(ctx.Done())
	defer podFactory.Shutdown()
	defer nsFactory.Shutdown()
	defer musterFactory.Shutdown()
	go wc.Run(ctx)
	return c.Run(ctx, o.Workers)
}

// lead runs the controller while this replica holds the Lease, so that two
// replicas serve the API active-active while only one controller acts.
func (o *ControllerOptions) lead(ctx context.Context, kube kubernetes.Interface, run func(context.Context)) {
	logger := klog.FromContext(ctx)
	id := o.identity
	if id == "" {
		host, _ := os.Hostname()
		id = host + "_" + o.uuid
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.LeaderElectNamespace, scheduling.ControllerName,
		kube.CoreV1(), kube.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: id})
	if err != nil {
		logger.Error(err, "Cannot create the leader-election lock; the controller does not run")
		return
	}
	// Leading ends when ctx ends or the Lease is lost; try again until ctx
	// ends. Each term builds its own controller, with its own metrics, and
	// starts only once the last term's controller has stopped.
	terms := newLeaderTerms()
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   o.LeaseDuration,
			RenewDeadline:   o.RenewDeadline,
			RetryPeriod:     o.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            scheduling.ControllerName,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					logger.Info("Became the leader; starting the controller", "identity", id)
					terms.run(ctx, run)
				},
				OnStoppedLeading: func() { logger.Info("Stopped leading", "identity", id) },
			},
		})
		if err != nil {
			// Only a configuration that Validate lets through can fail.
			logger.Error(err, "Cannot elect a leader; the controller does not run")
			return
		}
		o.elector.Store(le)
		le.Run(ctx)
	}
}

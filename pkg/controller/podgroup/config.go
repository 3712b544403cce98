package podgroup

import (
	"fmt"
	"math"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// Config tunes the controller. The zero value is not valid: start from
// DefaultConfig.
type Config struct {
	// Workers is how many groups are synced at once. A sync mostly waits
	// on kube-apiserver (finalizers, gates, status), so the default is
	// well above the cores: with 4, one tenant's churn of pods kept every
	// worker waiting on its patches, and another tenant's gang waited for
	// a worker (make abuse: a median release of 370-540 ms under attack in
	// three runs with 4, 163 and 315 ms in two with 16).
	Workers int
	// PatchConcurrency bounds the pod patches in flight for one group.
	PatchConcurrency int
	// ReleaseGrace is how long an admitted group with no active pod and
	// fewer than minCount successes waits for a replacement before it is
	// marked Failed.
	ReleaseGrace time.Duration
	// FastRelease makes a pod with a deletionTimestamp inactive at once
	// (KEP-6143), for admission and for status.active.
	FastRelease bool
	// StatusBatchPeriod throttles accounting status writes of one group
	// while its pods keep finishing (KEP-2307).
	StatusBatchPeriod time.Duration
	// NamespaceSelector picks the namespaces whose pods Muster manages.
	NamespaceSelector string
	// Admission is AdmissionCapacity (a gang is released only where all of
	// it fits, each pod pinned to its node) or AdmissionCount (a complete
	// gang is released whatever the free capacity).
	Admission string
	// QueueingStrategy orders gangs that wait for capacity.
	QueueingStrategy capacity.QueueingStrategy
	// StalledTimeout is how long a released pod may stay unschedulable on
	// the node reserved for it before the group reports it as Stalled.
	StalledTimeout time.Duration
	// ReservationTimeout is how long, from admission, capacity reserved for
	// the pods of a createdLater role waits for them, when the role does
	// not set reservationTimeoutSeconds.
	ReservationTimeout time.Duration
	// CreatedGroupTTL is how long a PodGroup that the controller created
	// from pod annotations stays once it has finished and has no pods left.
	CreatedGroupTTL time.Duration
	// MaxGroupsPerNamespace is how many PodGroups a namespace may hold,
	// from any source, for the controller still to create one from pods
	// there; 0 sets no bound. It bounds what a tenant who may only create
	// pods can store in Muster's etcd without a ResourceQuota.
	MaxGroupsPerNamespace int
	// CreatedGroupQPS and CreatedGroupBurst are the token bucket, per
	// namespace, of the PodGroups the controller creates from pods; a QPS
	// of 0 sets no rate.
	CreatedGroupQPS   float64
	CreatedGroupBurst int
	// Preemption lets a gang that does not fit evict whole admitted gangs
	// of strictly lower priority (capacity-aware admission only).
	Preemption bool
	// PreemptUnmanaged lets preemption evict pods Muster does not manage,
	// of strictly lower priority, too.
	PreemptUnmanaged bool
	// PreemptionMinRuntime spares a gang admitted (or a pod created) more
	// recently than this from preemption.
	PreemptionMinRuntime time.Duration
	// CompleteSchedulerPreemption says when step 6b preempts the rest of
	// a gang that kube-scheduler preempted one pod of: for pods Muster
	// released (CompleteForReleased), for any pod (CompleteAlways), or
	// never (CompleteNever).
	CompleteSchedulerPreemption string
	// Autoscaling says how a gang that does not fit the nodes there are
	// asks an autoscaler for room: AutoscalingAuto, AutoscalingPods,
	// AutoscalingProvisioningRequest or AutoscalingOff (capacity-aware
	// admission only). The server resolves auto, and builds the Requester.
	Autoscaling string
	// CapacityRequestTimeout is how long a gang's request may stand before
	// it is withdrawn unless the whole gang has room.
	CapacityRequestTimeout time.Duration
	// CapacityRequestMaxPods bounds the pods' room requested at once, over
	// all gangs.
	CapacityRequestMaxPods int
	// CapacityRequestImage is the capacity-request pods' one container.
	CapacityRequestImage string
}

// The ways of --autoscaling.
const (
	AutoscalingAuto                = "auto"
	AutoscalingPods                = "pods"
	AutoscalingProvisioningRequest = "provisioningrequest"
	AutoscalingOff                 = "off"
)

// The values of --complete-scheduler-preemption.
const (
	CompleteForReleased = "Released"
	CompleteAlways      = "Always"
	CompleteNever       = "Never"
)

// DefaultPreemptionMinRuntime is how long a gang runs, at least, before
// Muster's preemption may evict it: long enough that a gang admitted makes
// some progress before a higher-priority one takes its nodes, short next
// to the jobs gangs are for.
const DefaultPreemptionMinRuntime = time.Minute

// The admission modes of --admission.
const (
	AdmissionCapacity = "capacity"
	AdmissionCount    = "count"
)

// DefaultConfig returns the defaults the flags start from.
func DefaultConfig() Config {
	return Config{
		Workers:            16,
		PatchConcurrency:   16,
		ReleaseGrace:       30 * time.Second,
		FastRelease:        true,
		StatusBatchPeriod:  time.Second,
		NamespaceSelector:  scheduling.DefaultNamespaceSelector,
		Admission:          AdmissionCapacity,
		QueueingStrategy:   capacity.BestEffortFIFO,
		StalledTimeout:     time.Minute,
		ReservationTimeout: 5 * time.Minute,
		CreatedGroupTTL:    time.Hour,
		Preemption:         true,

		PreemptionMinRuntime:        DefaultPreemptionMinRuntime,
		CompleteSchedulerPreemption: CompleteForReleased,

		MaxGroupsPerNamespace: 1000,
		CreatedGroupQPS:       10,
		CreatedGroupBurst:     100,

		Autoscaling:            AutoscalingAuto,
		CapacityRequestTimeout: 10 * time.Minute,
		CapacityRequestMaxPods: 256,
		CapacityRequestImage:   scheduling.DefaultCapacityRequestImage,
	}
}

// AddFlags registers the controller's flags.
func (c *Config) AddFlags(fs *pflag.FlagSet) {
	fs.IntVar(&c.Workers, "controller-workers", c.Workers, "PodGroups the controller syncs at once.")
	fs.IntVar(&c.PatchConcurrency, "pod-patch-concurrency", c.PatchConcurrency, "Pod patches (gate or finalizer removal) in flight at once for one PodGroup.")
	fs.DurationVar(&c.ReleaseGrace, "release-grace", c.ReleaseGrace,
		"How long an admitted PodGroup with no active pod and fewer than minCount successes waits for a replacement pod before it is marked Failed.")
	fs.BoolVar(&c.FastRelease, "fast-release", c.FastRelease,
		"Treat a pod with a deletionTimestamp as inactive at once, for admission and status.active (KEP-6143). Set to false to wait until the pod is terminal.")
	fs.DurationVar(&c.StatusBatchPeriod, "status-batch-period", c.StatusBatchPeriod,
		"Shortest time between two accounting status writes of one PodGroup while its pods keep finishing (KEP-2307 throttling).")
	fs.StringVar(&c.NamespaceSelector, "namespace-selector", c.NamespaceSelector,
		"Label selector of the namespaces whose labelled pods Muster manages; by default all but kube-system and muster-system, "+
			"the webhook configurations' and the muster-pod-labels binding's namespaceSelector. Set the same selector there when you change it.")
	fs.StringVar(&c.Admission, "admission", c.Admission,
		"How a complete gang is admitted: 'capacity' releases it only where all of it fits, each pod pinned to the node reserved for it; "+
			"'count' releases it whatever the free capacity, for clusters where another system owns capacity.")
	fs.StringVar((*string)(&c.QueueingStrategy), "queueing-strategy", string(c.QueueingStrategy),
		"Order of gangs waiting for capacity: 'BestEffortFIFO' lets a gang that fits go ahead of an older or lower-priority one that does not; "+
			"'StrictFIFO' admits nothing behind the head of the queue. A gang that can never fit is skipped under both.")
	fs.DurationVar(&c.StalledTimeout, "stalled-pod-timeout", c.StalledTimeout,
		"How long a released pod may stay unschedulable on the node reserved for it (capacity taken by a pod Muster does not manage) "+
			"before its PodGroup reports Stalled=True.")
	fs.DurationVar(&c.ReservationTimeout, "reservation-timeout", c.ReservationTimeout,
		"How long, from a gang's admission, capacity reserved for the pods of a createdLater role (workers its driver creates) waits for them "+
			"before what is unclaimed is given back; a role's reservationTimeoutSeconds overrides it.")
	fs.DurationVar(&c.CreatedGroupTTL, "created-group-ttl", c.CreatedGroupTTL,
		"How long a PodGroup the controller created from pod annotations is kept once it has finished and has no pods left; then it is deleted. 0 deletes it at once.")
	fs.IntVar(&c.MaxGroupsPerNamespace, "max-podgroups-per-namespace", c.MaxGroupsPerNamespace,
		"Most PodGroups (from any source) a namespace may hold for the controller still to create one there from pod annotations; past it, such pods stay gated "+
			"with a Warning event until a group of the namespace is deleted. Groups created through the API are not refused (a ResourceQuota on "+
			"count/podgroups.scheduling.muster.dev bounds those). 0 sets no bound.")
	fs.Float64Var(&c.CreatedGroupQPS, "created-podgroup-qps", c.CreatedGroupQPS,
		"PodGroups per second, per namespace, that the controller creates from pod annotations once a namespace's burst is spent; "+
			"pods beyond it stay gated until their turn. 0 sets no rate.")
	fs.IntVar(&c.CreatedGroupBurst, "created-podgroup-burst", c.CreatedGroupBurst,
		"PodGroups the controller may create from pod annotations in one namespace at once before --created-podgroup-qps paces it.")
	fs.BoolVar(&c.Preemption, "preemption", c.Preemption,
		"Let a gang that does not fit evict whole admitted gangs of strictly lower priority (their pods get the condition DisruptionTarget, "+
			"reason PreemptionByMuster, and are deleted). A gang's priority is its pods' lowest (from their PriorityClass); with --admission=capacity only.")
	fs.BoolVar(&c.PreemptUnmanaged, "preempt-unmanaged", c.PreemptUnmanaged,
		"Let preemption evict pods Muster does not manage (without the pod-group label) of strictly lower priority too, each as a victim of its own.")
	fs.DurationVar(&c.PreemptionMinRuntime, "preemption-min-runtime", c.PreemptionMinRuntime,
		"Spare a gang admitted (or a pod Muster does not manage created) more recently than this from preemption, so that a gang "+
			"makes progress before a higher-priority one takes its nodes. 0 spares none.")
	fs.StringVar(&c.CompleteSchedulerPreemption, "complete-scheduler-preemption", c.CompleteSchedulerPreemption,
		"When kube-scheduler preempts one pod of an admitted gang (DisruptionTarget, reason PreemptionByScheduler), whether Muster preempts "+
			"the rest of the gang so that it does not run short: 'Released' only when the pod it was preempted for is one Muster released "+
			"(pinned to that node, of higher priority), so that a pod of any other tenant evicts one pod, never a gang; 'Always' for any pod "+
			"of higher priority (restrict high PriorityClasses with quotas first: priorityClassQuotas in the chart); 'Never'.")
	fs.StringVar(&c.Autoscaling, "autoscaling", c.Autoscaling,
		"How a gang that does not fit the nodes there are asks a cluster autoscaler for room, with --admission=capacity: "+
			"'pods' creates capacity-request pods (lowest priority, a pause container) that any autoscaler provisions for; "+
			"'provisioningrequest' creates one autoscaling.x-k8s.io/v1 ProvisioningRequest (cluster-autoscaler's atomic scale-up); "+
			"'auto' picks 'provisioningrequest' where the cluster serves it when the controller starts leading, else 'pods' where it serves "+
			"Karpenter's NodePools (karpenter.sh/v1), else nothing; 'off' asks for nothing. Set 'pods' for an autoscaler Muster cannot see "+
			"(cluster-autoscaler without ProvisioningRequest).")
	fs.DurationVar(&c.CapacityRequestTimeout, "capacity-request-timeout", c.CapacityRequestTimeout,
		"How long a gang's capacity request may stand without room for the whole gang, or fail to be made; then it is withdrawn, so that the autoscaler can take "+
			"back the nodes it added, and made again after a backoff (1m, doubling up to 30m).")
	fs.IntVar(&c.CapacityRequestMaxPods, "capacity-request-max-pods", c.CapacityRequestMaxPods,
		"Most pods' room requested from the autoscaler at once by the waiting gangs of one namespace; a namespace's gangs are served whole, in "+
			"admission order, and a gang larger than this asks alone when it is first in its namespace's line. Namespaces do not share it.")
	fs.StringVar(&c.CapacityRequestImage, "capacity-request-image", c.CapacityRequestImage,
		"Image of the capacity-request pods' one container, which never runs a workload. The policy muster-pod-creates allows "+
			"registry.k8s.io/pause images only: change it too when you change this.")
}

// Validate checks the configuration.
func (c *Config) Validate() []error {
	var errs []error
	if c.Workers < 1 {
		errs = append(errs, fmt.Errorf("--controller-workers must be at least 1, got %d", c.Workers))
	}
	if c.PatchConcurrency < 1 {
		errs = append(errs, fmt.Errorf("--pod-patch-concurrency must be at least 1, got %d", c.PatchConcurrency))
	}
	if c.ReleaseGrace < 0 {
		errs = append(errs, fmt.Errorf("--release-grace must not be negative, got %s", c.ReleaseGrace))
	}
	if c.StatusBatchPeriod < 0 {
		errs = append(errs, fmt.Errorf("--status-batch-period must not be negative, got %s", c.StatusBatchPeriod))
	}
	if c.Admission != AdmissionCapacity && c.Admission != AdmissionCount {
		errs = append(errs, fmt.Errorf("--admission must be %q or %q, got %q", AdmissionCapacity, AdmissionCount, c.Admission))
	}
	if c.QueueingStrategy != capacity.BestEffortFIFO && c.QueueingStrategy != capacity.StrictFIFO {
		errs = append(errs, fmt.Errorf("--queueing-strategy must be %q or %q, got %q", capacity.BestEffortFIFO, capacity.StrictFIFO, c.QueueingStrategy))
	}
	if c.ReservationTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--reservation-timeout must be positive, got %s", c.ReservationTimeout))
	}
	if c.CreatedGroupTTL < 0 {
		errs = append(errs, fmt.Errorf("--created-group-ttl must not be negative, got %s", c.CreatedGroupTTL))
	}
	errs = append(errs, c.validateCreatedGroups()...)
	if c.PreemptionMinRuntime < 0 {
		errs = append(errs, fmt.Errorf("--preemption-min-runtime must not be negative, got %s", c.PreemptionMinRuntime))
	}
	switch c.CompleteSchedulerPreemption {
	case CompleteForReleased, CompleteAlways, CompleteNever:
	default:
		errs = append(errs, fmt.Errorf("--complete-scheduler-preemption must be %q, %q or %q, got %q",
			CompleteForReleased, CompleteAlways, CompleteNever, c.CompleteSchedulerPreemption))
	}
	switch c.Autoscaling {
	case AutoscalingAuto, AutoscalingPods, AutoscalingProvisioningRequest, AutoscalingOff:
	default:
		errs = append(errs, fmt.Errorf("--autoscaling must be %q, %q, %q or %q, got %q",
			AutoscalingAuto, AutoscalingPods, AutoscalingProvisioningRequest, AutoscalingOff, c.Autoscaling))
	}
	if c.CapacityRequestTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--capacity-request-timeout must be positive, got %s", c.CapacityRequestTimeout))
	}
	if c.CapacityRequestMaxPods < 1 {
		errs = append(errs, fmt.Errorf("--capacity-request-max-pods must be at least 1, got %d", c.CapacityRequestMaxPods))
	}
	if c.CapacityRequestImage == "" {
		errs = append(errs, fmt.Errorf("--capacity-request-image must not be empty"))
	}
	if c.StalledTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--stalled-pod-timeout must be positive, got %s", c.StalledTimeout))
	}
	if _, err := labels.Parse(c.NamespaceSelector); err != nil {
		errs = append(errs, fmt.Errorf("--namespace-selector: %w", err))
	}
	return errs
}

// validateCreatedGroups checks the bounds on the groups the controller
// creates from pods. A QPS of NaN or infinity would parse from the flag, and
// a bucket of no token would never let a group be created.
func (c *Config) validateCreatedGroups() []error {
	var errs []error
	if c.MaxGroupsPerNamespace < 0 {
		errs = append(errs, fmt.Errorf("--max-podgroups-per-namespace must not be negative, got %d", c.MaxGroupsPerNamespace))
	}
	if math.IsNaN(c.CreatedGroupQPS) || math.IsInf(c.CreatedGroupQPS, 0) || c.CreatedGroupQPS < 0 {
		errs = append(errs, fmt.Errorf("--created-podgroup-qps must be a finite number, not negative, got %v", c.CreatedGroupQPS))
	}
	if c.CreatedGroupBurst < 0 || (c.CreatedGroupQPS > 0 && c.CreatedGroupBurst < 1) {
		errs = append(errs, fmt.Errorf("--created-podgroup-burst must be at least 1 while --created-podgroup-qps is set, got %d", c.CreatedGroupBurst))
	}
	return errs
}

package podgroup

import (
	"fmt"
	"sync"

	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

const metricsSubsystem = "muster"

// controllerMetrics are served on muster-apiserver's /metrics while the
// controller leads. Each Controller has its own (New), registers them when it
// starts (Run) and unregisters them when it stops, so that a replica that
// lost the Lease serves no stale gauges, and one that leads again registers
// a fresh set without colliding with the last.
type controllerMetrics struct {
	syncDuration       *k8smetrics.Histogram
	syncPanics         *k8smetrics.Counter
	gateRemovalLatency *k8smetrics.Histogram
	podsUngated        *k8smetrics.Counter
	podsAccounted      *k8smetrics.CounterVec
	gatedPods          *k8smetrics.GaugeVec
	waitingForCapacity *k8smetrics.Gauge
	admissionCycle     *k8smetrics.Histogram
	stalledGroups      *k8smetrics.Gauge
	preemptions        *k8smetrics.Counter
	preemptionVictims  *k8smetrics.Counter
	podsPreempted      *k8smetrics.Counter
	// Autoscaling (autoscaling.go).
	capacityRequestPods       *k8smetrics.Gauge
	capacityRequested         *k8smetrics.CounterVec
	capacityRequestAdmission  *k8smetrics.Histogram
	capacityRequestsWithdrawn *k8smetrics.CounterVec
	// Groups created from pods (createdbound.go).
	creationsRefused *k8smetrics.CounterVec

	mu sync.Mutex
	// groups remembers each group's gated pods and phase, so that the gauge
	// is a sum kept exact as groups change phase or go away.
	groups map[scheduling.GroupKey]groupGauge
}

type groupGauge struct {
	phase   string
	gated   int32
	stalled bool
}

func newControllerMetrics() *controllerMetrics {
	m := &controllerMetrics{
		syncDuration: k8smetrics.NewHistogram(&k8smetrics.HistogramOpts{
			Subsystem: metricsSubsystem, Name: "podgroup_sync_duration_seconds",
			Help:    "Time to sync one PodGroup.",
			Buckets: k8smetrics.ExponentialBuckets(0.001, 2, 15), StabilityLevel: k8smetrics.ALPHA,
		}),
		gateRemovalLatency: k8smetrics.NewHistogram(&k8smetrics.HistogramOpts{
			Subsystem: metricsSubsystem, Name: "pod_scheduling_gate_removal_seconds",
			Help:    "Time from the controller seeing the last pod a gang needed to the last admission gate of the gang being removed.",
			Buckets: k8smetrics.ExponentialBuckets(0.005, 2, 14), StabilityLevel: k8smetrics.ALPHA,
		}),
		syncPanics: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
			Subsystem: metricsSubsystem, Name: "controller_sync_panics_total",
			Help: "Syncs of a PodGroup that panicked; the controller recovered each and retries the group with backoff.", StabilityLevel: k8smetrics.ALPHA,
		}),
		podsUngated: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
			Subsystem: metricsSubsystem, Name: "pods_ungated_total",
			Help: "Pods whose admission gate the controller removed.", StabilityLevel: k8smetrics.ALPHA,
		}),
		podsAccounted: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
			Subsystem: metricsSubsystem, Name: "pods_accounted_total",
			Help: "Finished pods counted into PodGroup status, by result.", StabilityLevel: k8smetrics.ALPHA,
		}, []string{"result"}),
		gatedPods: k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
			Subsystem: metricsSubsystem, Name: "gated_pods",
			Help: "Pods held by the admission gate, by the phase of their PodGroup.", StabilityLevel: k8smetrics.ALPHA,
		}, []string{"phase"}),
		waitingForCapacity: k8smetrics.NewGauge(&k8smetrics.GaugeOpts{
			Subsystem: metricsSubsystem, Name: "podgroups_waiting_for_capacity",
			Help: "PodGroups that are complete but do not fit the free capacity (InsufficientCapacity, ExceedsClusterCapacity or Queued).", StabilityLevel: k8smetrics.ALPHA,
		}),
		admissionCycle: k8smetrics.NewHistogram(&k8smetrics.HistogramOpts{
			Subsystem: metricsSubsystem, Name: "admission_cycle_duration_seconds",
			Help:    "Time to place every waiting PodGroup on one snapshot of the cluster.",
			Buckets: k8smetrics.ExponentialBuckets(0.0001, 2, 16), StabilityLevel: k8smetrics.ALPHA,
		}),
		stalledGroups: k8smetrics.NewGauge(&k8smetrics.GaugeOpts{
			Subsystem: metricsSubsystem, Name: "podgroups_stalled",
			Help: "PodGroups with a released pod that stays unschedulable on the node reserved for it.", StabilityLevel: k8smetrics.ALPHA,
		}),
		preemptions: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
			Subsystem: metricsSubsystem, Name: "preemptions_total",
			Help: "Preemptions decided: gangs that evict lower-priority gangs (or pods) to fit.", StabilityLevel: k8smetrics.ALPHA,
		}),
		preemptionVictims: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
			Subsystem: metricsSubsystem, Name: "preemption_victims_total",
			Help: "Gangs and pods that preemptions decided to evict, each counted once.", StabilityLevel: k8smetrics.ALPHA,
		}),
		podsPreempted: k8smetrics.NewCounter(&k8smetrics.CounterOpts{
			Subsystem: metricsSubsystem, Name: "pods_preempted_total",
			Help: "Pods the controller gave the DisruptionTarget condition (reason PreemptionByMuster) and deleted.", StabilityLevel: k8smetrics.ALPHA,
		}),
		capacityRequestPods: k8smetrics.NewGauge(&k8smetrics.GaugeOpts{
			Subsystem: metricsSubsystem, Name: "capacity_request_pods",
			Help: "Pods' room that waiting gangs ask an autoscaler for now, as decided by the last admission cycle.", StabilityLevel: k8smetrics.ALPHA,
		}),
		capacityRequested: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
			Subsystem: metricsSubsystem, Name: "capacity_requested_pods_total",
			Help: "Pods' room asked of an autoscaler, by the kind of request (Pods or ProvisioningRequest); a request made again counts again.", StabilityLevel: k8smetrics.ALPHA,
		}, []string{"kind"}),
		capacityRequestAdmission: k8smetrics.NewHistogram(&k8smetrics.HistogramOpts{
			Subsystem: metricsSubsystem, Name: "capacity_request_admission_seconds",
			Help:    "Time from a gang's capacity request to the gang's admission.",
			Buckets: []float64{1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600}, StabilityLevel: k8smetrics.ALPHA,
		}),
		capacityRequestsWithdrawn: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
			Subsystem: metricsSubsystem, Name: "capacity_requests_withdrawn_total",
			Help: "Capacity requests withdrawn before their gang had room: reason timeout (--capacity-request-timeout), refused (by the autoscaler), or failed (could not be made for --capacity-request-timeout).", StabilityLevel: k8smetrics.ALPHA,
		}, []string{"reason"}),
		creationsRefused: k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
			Subsystem: metricsSubsystem, Name: "controller_podgroup_creations_refused_total",
			Help: "PodGroups the controller did not create from pods when asked: reason max-per-namespace (the namespace holds --max-podgroups-per-namespace groups) " +
				"or rate (paced by --created-podgroup-qps; the group waits for its turn). A group held again counts again.", StabilityLevel: k8smetrics.ALPHA,
		}, []string{"reason"}),
		groups: map[scheduling.GroupKey]groupGauge{},
	}
	return m
}

// all lists the metrics, to register and unregister them together.
func (m *controllerMetrics) all() []k8smetrics.Registerable {
	return []k8smetrics.Registerable{m.syncDuration, m.syncPanics, m.gateRemovalLatency, m.podsUngated, m.podsAccounted, m.gatedPods,
		m.waitingForCapacity, m.admissionCycle, m.stalledGroups, m.preemptions, m.preemptionVictims, m.podsPreempted,
		m.capacityRequestPods, m.capacityRequested, m.capacityRequestAdmission, m.capacityRequestsWithdrawn,
		m.creationsRefused}
}

// metricsRegistry is where a running controller serves its metrics: the
// process's legacy registry, which muster-apiserver's /metrics serves
// (legacyRegistry), or a test's own.
type metricsRegistry interface {
	Register(k8smetrics.Registerable) error
	Unregister(k8smetrics.Collector) bool
}

// legacyRegistry is component-base's global registry, which has no
// Unregister of its own but hands out the Prometheus registry beneath it.
type legacyRegistry struct{}

func (legacyRegistry) Register(r k8smetrics.Registerable) error { return legacyregistry.Register(r) }
func (legacyRegistry) Unregister(c k8smetrics.Collector) bool {
	return legacyregistry.Registerer().Unregister(c)
}

// register serves the metrics from reg, all or none: a set still
// registered by a controller that has not stopped is an error, not a panic.
func (m *controllerMetrics) register(reg metricsRegistry) error {
	for i, r := range m.all() {
		if err := reg.Register(r); err != nil {
			for _, done := range m.all()[:i] {
				reg.Unregister(done)
			}
			return fmt.Errorf("registering metric %s: %w", r.FQName(), err)
		}
	}
	return nil
}

// unregister stops serving the metrics from reg: the gauges of a controller
// that no longer leads say nothing true about the cluster.
func (m *controllerMetrics) unregister(reg metricsRegistry) {
	for _, r := range m.all() {
		reg.Unregister(r)
	}
}

// observeGroup updates the gated-pods gauge for one group.
func (m *controllerMetrics) observeGroup(key scheduling.GroupKey, pg *v1alpha1.PodGroup) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.move(key, &groupGauge{phase: string(pg.Status.Phase), gated: pg.Status.Gated, stalled: isStalled(pg)})
}

// forgetGroup drops a deleted group from the gauge.
func (m *controllerMetrics) forgetGroup(key scheduling.GroupKey) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.move(key, nil)
}

// move replaces a group's share of the gauges; nil removes the group.
func (m *controllerMetrics) move(key scheduling.GroupKey, now *groupGauge) {
	if old, ok := m.groups[key]; ok {
		m.gatedPods.WithLabelValues(old.phase).Add(-float64(old.gated))
		if old.stalled {
			m.stalledGroups.Dec()
		}
	}
	if now == nil {
		delete(m.groups, key)
		return
	}
	if now.stalled {
		m.stalledGroups.Inc()
	}
	m.groups[key] = *now
	m.gatedPods.WithLabelValues(now.phase).Add(float64(now.gated))
}

package podgroup

import (
	"time"

	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/controller/admission"
	"github.com/muster-dev/muster/pkg/controller/capacityadmission"
)

// newAdmitter builds the admission mode cfg.Admission asks for
// (admission.Mode): countAdmission, or capacity-aware admission
// (pkg/controller/capacityadmission), and returns what Run must wait for
// before the first sync. The mode decides; recordDecision (decision.go)
// writes what it decided.
func (c *Controller) newAdmitter(nodes coreinformers.NodeInformer) (admission.Mode, []cache.InformerSynced, error) {
	if c.cfg.Admission != AdmissionCapacity {
		return countAdmission{}, nil, nil
	}
	opts := capacityadmission.Options{
		FastRelease:          c.cfg.FastRelease,
		Strategy:             c.cfg.QueueingStrategy,
		ReservationTimeout:   c.cfg.ReservationTimeout,
		Preemption:           c.cfg.Preemption,
		PreemptUnmanaged:     c.cfg.PreemptUnmanaged,
		PreemptionMinRuntime: c.cfg.PreemptionMinRuntime,
	}
	if c.requester != nil {
		opts.Autoscaling = &capacityadmission.AutoscalingOptions{
			Requester: c.requester,
			Timeout:   c.cfg.CapacityRequestTimeout,
			MaxPods:   int32(c.cfg.CapacityRequestMaxPods),
			Image:     c.cfg.CapacityRequestImage,
		}
	}
	a, synced, err := capacityadmission.New(opts, capacityadmission.Env{
		Kube: c.kube, Nodes: nodes, Announce: c.announce, Clock: c.clock,
		Enqueue: c.queue.Add, Metrics: modeMetrics{c.metrics},
	})
	if err != nil {
		return nil, nil, err
	}
	return a, synced, nil
}

// modeMetrics serves capacity admission's metrics (capacityadmission.Metrics)
// on the controller's.
type modeMetrics struct{ m *controllerMetrics }

func (mm modeMetrics) Waiting(n int) { mm.m.waitingForCapacity.Set(float64(n)) }

func (mm modeMetrics) CycleTook(d time.Duration) { mm.m.admissionCycle.Observe(d.Seconds()) }

func (mm modeMetrics) RequestAdmitted(waited time.Duration) {
	mm.m.capacityRequestAdmission.Observe(waited.Seconds())
}

func (mm modeMetrics) PodsRequested(n int32) { mm.m.capacityRequestPods.Set(float64(n)) }

func (mm modeMetrics) Requested(kind string, pods int32) {
	mm.m.capacityRequested.WithLabelValues(kind).Add(float64(pods))
}

func (mm modeMetrics) RequestWithdrawn(why string) {
	mm.m.capacityRequestsWithdrawn.WithLabelValues(why).Inc()
}

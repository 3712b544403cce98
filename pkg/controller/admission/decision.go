package admission

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// Decision is what an admission mode decided for one group in one sync.
// The zero Decision says nothing: not admitted, nothing new to record.
type Decision struct {
	// Admitted says that a complete gang is admitted now (Mode.AdmitGang).
	Admitted bool
	// Reason and Message are those of Admitted=True when Admitted, else
	// those of Admitted=False; Reason is "" when there is nothing new to
	// say.
	Reason, Message string
	// Places, when not nil, is what status.placements and
	// status.reservations become.
	Places *Places
	// Preemption, when not nil, is a preemption decided for the gang: it
	// goes into status.preemption with Admitted=False, reason Preempting
	// and Message, before any victim is touched.
	Preemption *v1alpha1.PodGroupPreemption
	// EndPreemption clears status.preemption: the gang is admitted on the
	// capacity its victims gave back.
	EndPreemption bool
	// Conditions are other conditions the decision sets (CapacityReserved).
	Conditions []Condition
	// Events are recorded on the group once the status write that records
	// the decision has succeeded, so that a conflict never repeats them.
	Events []Event
	// FromCycle says that the decision carries out an admission cycle's:
	// once status records it, the mode is told (Mode.Recorded).
	FromCycle bool
	// Recheck is when to look at the group again (a reservation or a held
	// placement that times out), 0 for no timer.
	Recheck time.Duration
}

// Places is what a group's status holds of capacity: the pods placed on a
// node and not yet released, and the places reserved for pods of roles
// created later.
type Places struct {
	Placements   []v1alpha1.PodPlacement
	Reservations []v1alpha1.RoleReservation
	// Domains says that the gang is admitted now, in TopologyDomain (nil:
	// none) and its roles in RoleDomains, for status.topologyDomain and
	// status.roles[].topologyDomain; without it those are kept.
	Domains        bool
	TopologyDomain *v1alpha1.TopologyDomain
	RoleDomains    map[string]v1alpha1.TopologyDomain
}

// Condition is a condition a Decision sets on its group.
type Condition struct {
	Type            string
	Status          metav1.ConditionStatus
	Reason, Message string
}

// Event is an event a Decision records on its group.
type Event struct {
	Type, Reason, Message string
}

// Announce is how a mode tells the controller of what it did for a group
// outside a sync: a capacity request made, provided for, or withdrawn. The
// controller says it on the group, as an event: a mode records nothing on
// a PodGroup itself.
type Announce func(key scheduling.GroupKey, uid types.UID, e Event)

// Set adds a condition to set, after those added before.
func (d *Decision) Set(typ string, status metav1.ConditionStatus, reason, message string) {
	d.Conditions = append(d.Conditions, Condition{Type: typ, Status: status, Reason: reason, Message: message})
}

// Record adds an event to record once the decision is written.
func (d *Decision) Record(eventType, reason, message string) {
	d.Events = append(d.Events, Event{Type: eventType, Reason: reason, Message: message})
}

package autoscaling

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// The kinds of Requester.
const (
	KindPods                = "Pods"
	KindProvisioningRequest = "ProvisioningRequest"
)

// Demand is the room one waiting gang asks for.
type Demand struct {
	// Namespace, Name and UID are the PodGroup's: what a request creates
	// lives in its namespace and is owned by it, so that it goes with it.
	Namespace, Name string
	UID             types.UID
	// PodSets are the gang's pods, those not yet created of createdLater
	// roles too, grouped by identical capacity-request pods (PodSets).
	PodSets []PodSet
	// Hash identifies PodSets: a request made for another hash is replaced.
	Hash string
}

// Key is the group's key.
func (d Demand) Key() scheduling.GroupKey { return scheduling.NewGroupKey(d.Namespace, d.Name) }

// Pods is how many pods' room the demand asks for.
func (d Demand) Pods() int32 {
	var n int32
	for _, s := range d.PodSets {
		n += s.Count
	}
	return n
}

// PodSet is Count pods of one shape.
type PodSet struct {
	// Template is the capacity-request pod (CapacityRequestTemplate): the
	// shape and scheduling constraints of the gang's pods, a pause
	// container, the lowest priority. It has no owner: the Requester sets
	// that.
	Template corev1.PodTemplateSpec
	Count    int32
}

// State is what exists of one group's request.
type State struct {
	// Kind is the Requester's kind, and Name says which objects make the
	// request, for the group's status message: "ProvisioningRequest
	// ns/name", or the pods' label selector.
	Kind, Name string
	// Hash is the Demand.Hash the request was made for.
	Hash string
	// Since is when the request was made: its oldest object's creation.
	Since time.Time
	// Requested is how many pods' room it asks for; Provisioned how many of
	// them have it now: capacity-request pods bound to a node, or all of
	// them once a ProvisioningRequest is Provisioned.
	Requested, Provisioned int32
	// Failed is the autoscaler's word that it cannot provide the room (a
	// ProvisioningRequest's Failed=True message, or its booking expired);
	// "" while it may.
	Failed string
}

// Requester makes groups' requests exist or not. Its methods are safe for
// concurrent use. Request and Withdraw are API calls, made from the
// controller's workers, never from an admission cycle; State and Keys read
// the Requester's informer and cost no API call.
type Requester interface {
	// Kind is KindPods or KindProvisioningRequest.
	Kind() string
	// Start runs the Requester's informers until ctx ends. changed is
	// called with a group's key whenever what exists of its request
	// changes (a pod bound, a condition set), so that admission looks
	// again. It returns what must sync before State is read.
	Start(ctx context.Context, changed func(key scheduling.GroupKey)) (synced func() bool)
	// Check says why d can never be asked for with this Requester, or nil:
	// a shape the autoscaler's API cannot hold. It costs no API call.
	Check(d Demand) error
	// Request makes d's request exist: it creates what is missing, and
	// replaces a request made for another Demand.Hash. It is idempotent.
	Request(ctx context.Context, d Demand) error
	// Withdraw deletes all of the group's request; a group with none is
	// no error.
	Withdraw(ctx context.Context, key scheduling.GroupKey) error
	// State reports what exists of the group's request.
	State(key scheduling.GroupKey) (State, bool)
	// Keys lists the groups that have a request.
	Keys() []scheduling.GroupKey
}

package server

import (
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	schedulinginformers "k8s.io/client-go/informers/scheduling/v1"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/podgroup"
	listers "github.com/muster-dev/muster/pkg/generated/listers/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/visibility"
	"github.com/muster-dev/muster/pkg/whatif"
)

// newLeaderView is what a term's controller offers the API's views while
// it runs: its admission, the groups and Workloads it sees, and the cluster's priority
// classes, which a review's pods resolve their priority with as
// kube-apiserver's Priority plugin would. The informer of the classes
// must be started with the controller's others.
func newLeaderView(c *podgroup.Controller, workloads listers.WorkloadLister, classes schedulinginformers.PriorityClassInformer) *visibility.Leader {
	inf := classes.Informer()
	l := &visibility.Leader{
		Lookup: lookup{groups: c.PodGroups(), workloads: workloads, classes: classes.Lister()},
		Synced: func() bool { return c.HasSynced() && inf.HasSynced() },
	}
	// A nil *Mode in the interface would look like an engine.
	if m := c.Capacity(); m != nil {
		l.Engine = m
	}
	return l
}

// lookup reads the controller's caches.
type lookup struct {
	groups    listers.PodGroupLister
	workloads listers.WorkloadLister
	classes   schedulinglisters.PriorityClassLister
}

var _ whatif.WorkloadLookup = lookup{}

func (l lookup) PodGroup(namespace, name string) (*v1alpha1.PodGroup, error) {
	pg, err := l.groups.PodGroups(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return pg, err
}

func (l lookup) Workload(namespace, name string) (*v1alpha1.Workload, error) {
	w, err := l.workloads.Workloads(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return w, err
}

func (l lookup) PriorityClasses() ([]*schedulingv1.PriorityClass, error) {
	return l.classes.List(labels.Everything())
}

package instance

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Reader reads the object an owner reference names, in namespace.
type Reader interface {
	Get(ctx context.Context, namespace string, ref metav1.OwnerReference) (*unstructured.Unstructured, error)
}

// MaxDepth is the most owners a walk reads: a LeaderWorkerSet's worker is
// four levels below it (StatefulSet, leader pod, StatefulSet), a
// TrainJob's pod three (Job, JobSet).
const MaxDepth = 6

// Instance is what a walk found of a pod's workload instance.
type Instance struct {
	// Top is the instance's top owner: the last controller up the pod's
	// chain, stopping below a CronJob, which makes instances and is not
	// one. Nil when the pod has no controller.
	Top *metav1.OwnerReference
	// Size is how many pods the instance runs, read from the highest
	// owner on the way whose kind says so (size.go); 0 when none does.
	Size int32
	// SizedBy names that owner, as "Kind name", for messages.
	SizedBy string
	// Gone is set when the walk ended at an owner that no longer exists:
	// not found, or replaced by another object of its name (a new UID).
	// The pod then belongs to an instance that is being torn down, as a
	// LeaderWorkerSet group's old workers are once their leader pod was
	// recreated, until the garbage collector deletes them.
	Gone bool
}

// cronJob makes Jobs, one instance each.
var cronJob = schema.GroupKind{Group: "batch", Kind: "CronJob"}

// Walk follows controller references up from start, the pod's own
// controller. An owner that is gone or that Muster may not read (not
// found, forbidden, or a kind the cluster does not serve) ends the walk
// where it is: the group is then owned by the last owner reached, which
// the garbage collector still deletes it with. Any other error is
// returned, to be retried.
func Walk(ctx context.Context, r Reader, namespace string, start *metav1.OwnerReference) (Instance, error) {
	var in Instance
	ref := start
	sizedAt := -1
	for depth := 0; ref != nil && depth < MaxDepth; depth++ {
		in.Top = ref
		obj, err := r.Get(ctx, namespace, *ref)
		switch {
		case apierrors.IsNotFound(err):
			in.Gone = true
			return in, nil
		case apierrors.IsForbidden(err) || isNoMatch(err):
			return in, nil
		case err != nil:
			return in, fmt.Errorf("reading %s %s/%s, an owner of the pod: %w", ref.Kind, namespace, ref.Name, err)
		case obj.GetUID() != ref.UID:
			// Replaced by another object of the same name: the owner
			// the pod names is gone.
			in.Gone = true
			return in, nil
		}
		if n, ok := sizeOf(obj); ok && depth > sizedAt {
			in.Size, in.SizedBy, sizedAt = n, ref.Kind+" "+ref.Name, depth
		}
		next := metav1.GetControllerOfNoCopy(obj)
		if next == nil {
			return in, nil
		}
		if gv, err := schema.ParseGroupVersion(next.APIVersion); err == nil && gv.WithKind(next.Kind).GroupKind() == cronJob {
			return in, nil
		}
		ref = next
	}
	return in, nil
}

package podgroup

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// GroupIndex indexes pods by "<namespace>/<group label>", so that a sync
// reads its group's pods without scanning the cache.
const GroupIndex = "muster-group"

// PodListOptions limits the pod informer to pods that carry the group label:
// other pods are never sent to or stored by the controller.
func PodListOptions(o *metav1.ListOptions) {
	o.LabelSelector = scheduling.PodGroupLabel
}

// addPodIndexer installs GroupIndex on the pod informer; New calls it, so
// that a controller never runs over an informer without its index.
func addPodIndexer(informer cache.SharedIndexInformer) error {
	return informer.AddIndexers(cache.Indexers{GroupIndex: func(obj interface{}) ([]string, error) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("indexing %T as a pod", obj)
		}
		if key, ok := podGroupKey(p); ok {
			return []string{key.String()}, nil
		}
		return nil, nil
	}})
}

// groupKey is the key of the group name in namespace: the workqueue's key,
// its pods' GroupIndex value (as a string), and the key of all the
// controller keeps per group.
func groupKey(namespace, name string) scheduling.GroupKey {
	return scheduling.NewGroupKey(namespace, name)
}

// podGroupKey is the key of the group a pod is labelled for, if any.
func podGroupKey(p *corev1.Pod) (scheduling.GroupKey, bool) {
	return scheduling.GroupKeyOf(p)
}

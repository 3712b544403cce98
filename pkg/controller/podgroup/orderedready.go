package podgroup

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// orderedReady is step 6's check for a group short of pods: does a
// StatefulSet that creates its pods one at a time control some of them?
// With podManagementPolicy OrderedReady (the default when the field is
// unset) the StatefulSet controller creates pod N+1 only once pod N is
// Ready, and pod 0 stays gated until minCount pods exist: a gang of more
// than one pod can never form. Waiting would be silent for ever, so the
// group says so at once: Admitted=False with reason OrderedReadyStatefulSet
// and a Warning event naming the StatefulSet, the policy and the fix. A
// group of minCount 1, one with minCount pods, or one whose StatefulSet is
// Parallel or not in the cache gets nil: it just waits for pods.
func (c *Controller) orderedReady(pg *v1alpha1.PodGroup, v *podView, pods []*corev1.Pod) *notAdmitted {
	need := minCount(pg)
	if need <= 1 || v.pods >= need {
		return nil
	}
	sts := c.orderedReadyStatefulSet(pg.Namespace, pods)
	if sts == "" {
		return nil
	}
	msg := fmt.Sprintf("has %d of the %d pods it needs, and never will: StatefulSet %s has podManagementPolicy OrderedReady (the default), so it creates each pod only once the one before it is Ready, while every pod stays gated until %d exist; %s",
		v.pods, need, sts, need, scheduling.OrderedReadyFix)
	return warning(scheduling.ReasonOrderedReadyStatefulSet, truncate(msg), scheduling.EventOrderedReadyStatefulSet)
}

// orderedReadyStatefulSet returns the first by name of the StatefulSets
// that control some of pods and create them one at a time. kube-apiserver
// stores an unset policy as OrderedReady; a cache fed otherwise may hold it
// unset.
func (c *Controller) orderedReadyStatefulSet(namespace string, pods []*corev1.Pod) string {
	seen := sets.New[types.UID]()
	var found []string
	for _, p := range pods {
		name, uid, ok := ownedBy(p, statefulSetOwner)
		if !ok || seen.Has(uid) {
			continue
		}
		seen.Insert(uid)
		sts, err := c.stsLister.StatefulSets(namespace).Get(name)
		if err != nil || sts.UID != uid {
			continue
		}
		if policy := sts.Spec.PodManagementPolicy; policy == "" || policy == appsv1.OrderedReadyPodManagement {
			found = append(found, name)
		}
	}
	if len(found) == 0 {
		return ""
	}
	return slices.Min(found)
}

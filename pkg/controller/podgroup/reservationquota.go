package podgroup

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/quota/v1/evaluator/core"
	"k8s.io/utils/clock"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
)

// Reserved places and the namespace's ResourceQuota (issue 21, item 2).
//
// A place reserved for a pod created later holds cluster capacity for a
// pod that kube-apiserver's quota admission has not seen: without a check
// here, a tenant whose quota allows 16 cpu of pods could reserve the whole
// cluster, and every other tenant's gang would wait. So a gang whose
// reserved places would not fit in what each ResourceQuota of its
// namespace has left is not admitted: Admitted=False/ReservationOverQuota,
// naming the roles, the quota and the resource. The usage of a reserved
// place is the one kube-apiserver charges the pod it stands for (the
// scheduler-relevant template: requests, and the pod count), through the
// same evaluator, including quota scopes.

// podQuota is kube-apiserver's own evaluator of a pod's quota usage.
var podQuota = core.NewPodEvaluator(nil, clock.RealClock{})

// checkReservationQuota is step 6's check of reserved places against the
// namespace's quotas: nil when the gang may be admitted.
func (c *Controller) checkReservationQuota(pg *v1alpha1.PodGroup, missing map[string]int32) *notAdmitted {
	if c.quotaLister == nil || len(missing) == 0 {
		return nil
	}
	quotas, err := c.quotaLister.ResourceQuotas(pg.Namespace).List(labels.Everything())
	if err != nil || len(quotas) == 0 {
		return nil
	}
	msg, err := reservationOverQuota(pg, missing, quotas)
	if err != nil {
		klog.Background().Error(err, "Evaluating reserved places against quota", "podGroup", klog.KObj(pg))
		return nil
	}
	if msg == "" {
		return nil
	}
	return warning(scheduling.ReasonReservationOverQuota, truncate(msg), scheduling.EventWaiting)
}

// reservationOverQuota says which quota the places reserved for missing
// (pods per createdLater role) would exceed, or "" when every quota holds
// them.
func reservationOverQuota(pg *v1alpha1.PodGroup, missing map[string]int32, quotas []*corev1.ResourceQuota) (string, error) {
	// Each missing role's stand-in pod and its usage, computed once and
	// charged against every quota whose scopes it matches.
	type role struct {
		path  string
		n     int32
		pod   *corev1.Pod
		usage corev1.ResourceList
	}
	var roles []role
	for i, r := range pg.Spec.Roles {
		n := missing[r.Name]
		if n <= 0 {
			continue
		}
		p := admission.TemplatePod(r.Template)
		p.Namespace = pg.Namespace
		usage, err := podQuota.Usage(p)
		if err != nil {
			return "", fmt.Errorf("role %s: %w", r.Name, err)
		}
		roles = append(roles, role{field.NewPath("spec", "roles").Index(i).Child("count").String(), n, p, usage})
	}
	sorted := append([]*corev1.ResourceQuota(nil), quotas...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, q := range sorted {
		limited := quota.ResourceNames(q.Status.Hard)
		var need corev1.ResourceList
		var named []string
		for _, r := range roles {
			matches, err := podQuota.Matches(q, r.pod)
			if err != nil {
				return "", fmt.Errorf("quota %s: %w", q.Name, err)
			}
			if !matches {
				continue
			}
			need = quota.Add(need, times(quota.Mask(r.usage, limited), r.n))
			named = append(named, fmt.Sprintf("%s (%d)", r.path, r.n))
		}
		if len(need) == 0 {
			continue
		}
		left := quota.SubtractWithNonNegativeResult(q.Status.Hard, q.Status.Used)
		if ok, over := quota.LessThanOrEqual(need, left); !ok {
			var parts []string
			for _, name := range over {
				used, hard, want, rest := q.Status.Used[name], q.Status.Hard[name], need[name], left[name]
				parts = append(parts, fmt.Sprintf("%s: needs %s, has %s left (hard %s, used %s)", name, want.String(), rest.String(), hard.String(), used.String()))
			}
			sort.Strings(parts)
			return fmt.Sprintf("places reserved for pods created later, %s, exceed ResourceQuota %s: %s; a tenant may reserve only what its quota lets it run",
				strings.Join(named, ", "), q.Name, strings.Join(parts, "; ")), nil
		}
	}
	return "", nil
}

// times is a usage multiplied by n.
func times(l corev1.ResourceList, n int32) corev1.ResourceList {
	out := make(corev1.ResourceList, len(l))
	for name, q := range l {
		q = q.DeepCopy()
		q.Mul(int64(n))
		out[name] = q
	}
	return out
}

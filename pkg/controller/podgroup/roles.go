package podgroup

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// Roles (KEP-976 story 3): a group with spec.roles is complete when every
// role has its count of active pods, and its status counts each role's pods
// as the totals count all of them. A pod names its role with RoleLabel.

// roleOf is the role a pod names; "" when it names none.
func roleOf(p *corev1.Pod) string { return p.Labels[scheduling.RoleLabel] }

// countActiveRole is step 2's share for roles: one more active pod of p's role.
func (v *classification) countActiveRole(p *corev1.Pod) {
	if v.roleActive == nil {
		v.roleActive = map[string]int32{}
	}
	v.roleActive[roleOf(p)]++
}

// rolesShort is step 6's check for roles: it says which roles have fewer
// active pods than their count. A gang with enough pods in total can still
// lack a role, such as ten workers and no driver; such a gang is not
// complete. Roles created later are not waited for: capacity-aware
// admission reserves places for their missing pods
// (capacityadmission/reservations.go).
func rolesShort(pg *v1alpha1.PodGroup, v *podView) (string, bool) {
	var short []string
	for _, r := range pg.Spec.Roles {
		if have := v.roleActive[r.Name]; have < r.Count && !r.CreatedLater {
			short = append(short, fmt.Sprintf("%s has %d of %d", r.Name, have, r.Count))
		}
	}
	if len(short) == 0 {
		return "", false
	}
	return fmt.Sprintf("roles lack active pods: %s", strings.Join(short, "; ")), true
}

// roleDecision is what of a role's status records a decision: its
// accounting, which is written before any finalizer comes off.
type roleDecision struct {
	Name              string
	Succeeded, Failed int32
	Uncounted         *v1alpha1.UncountedTerminatedPods
	Domain            *v1alpha1.TopologyDomain
}

func roleDecisions(statuses []v1alpha1.PodGroupRoleStatus) []roleDecision {
	var ds []roleDecision
	for _, s := range statuses {
		ds = append(ds, roleDecision{Name: s.Name, Succeeded: s.Succeeded, Failed: s.Failed, Uncounted: s.UncountedTerminatedPods, Domain: s.TopologyDomain})
	}
	return ds
}

// setRoleCounters is step 4's share for roles: status.roles holds one entry
// per role, in the order of spec.roles, with the role's active pods from
// this snapshot and its finished counts as they were.
func setRoleCounters(pg *v1alpha1.PodGroup, v *podView) {
	if len(pg.Spec.Roles) == 0 {
		return
	}
	old := make(map[string]v1alpha1.PodGroupRoleStatus, len(pg.Status.Roles))
	for _, s := range pg.Status.Roles {
		old[s.Name] = s
	}
	statuses := make([]v1alpha1.PodGroupRoleStatus, len(pg.Spec.Roles))
	for i, r := range pg.Spec.Roles {
		s := old[r.Name]
		s.Name = r.Name
		s.Active = v.roleActive[r.Name]
		statuses[i] = s
	}
	pg.Status.Roles = statuses
}

// recordRoleFinished is step 5's share for roles: each UID in the group's
// uncountedTerminatedPods whose pod names a role goes into that role's list
// in the same write, so that step 11 can count it in its role even once the
// pod is gone.
func recordRoleFinished(pg *v1alpha1.PodGroup, v *podView) {
	u := pg.Status.UncountedTerminatedPods
	if u == nil || len(pg.Status.Roles) == 0 {
		return
	}
	index := make(map[string]int, len(pg.Status.Roles))
	recorded := sets.New[types.UID]()
	for i, s := range pg.Status.Roles {
		index[s.Name] = i
		if ru := s.UncountedTerminatedPods; ru != nil {
			recorded.Insert(ru.Succeeded...).Insert(ru.Failed...)
		}
	}
	add := func(uids []types.UID, list func(*v1alpha1.UncountedTerminatedPods) *[]types.UID) {
		for _, uid := range uids {
			p, ok := v.withFinalizer[uid]
			if !ok || recorded.Has(uid) {
				continue
			}
			i, ok := index[roleOf(p)]
			if !ok {
				continue // a pod of no role of the spec counts only in the totals.
			}
			s := &pg.Status.Roles[i]
			if s.UncountedTerminatedPods == nil {
				s.UncountedTerminatedPods = &v1alpha1.UncountedTerminatedPods{}
			}
			l := list(s.UncountedTerminatedPods)
			*l = append(*l, uid)
		}
	}
	add(u.Succeeded, func(r *v1alpha1.UncountedTerminatedPods) *[]types.UID { return &r.Succeeded })
	add(u.Failed, func(r *v1alpha1.UncountedTerminatedPods) *[]types.UID { return &r.Failed })
}

// countRoleRemoved is step 11's share for roles: a UID that step 11 counts
// in the group is counted in its role in the same write, and leaves the
// role's list.
func countRoleRemoved(pg *v1alpha1.PodGroup, counted func(types.UID) bool) {
	for i := range pg.Status.Roles {
		s := &pg.Status.Roles[i]
		u := s.UncountedTerminatedPods
		if u == nil {
			continue
		}
		move := func(uids []types.UID, counter *int32) []types.UID {
			return slices.DeleteFunc(slices.Clone(uids), func(uid types.UID) bool {
				if counted(uid) {
					*counter++
					return true
				}
				return false
			})
		}
		u.Succeeded = move(u.Succeeded, &s.Succeeded)
		u.Failed = move(u.Failed, &s.Failed)
		if len(u.Succeeded) == 0 && len(u.Failed) == 0 {
			s.UncountedTerminatedPods = nil
		}
	}
}

// checkRoles is step 4b: pods whose role label or role annotations disagree
// with spec.roles get a RolesMismatch event each, and the group says so in
// its RoleMismatch condition, which goes back to False once they are gone.
// Such pods are not counted in any role, so the gang waits for pods that
// agree rather than being admitted with the wrong shapes.
func (c *Controller) checkRoles(pg *v1alpha1.PodGroup, pods []*corev1.Pod, now time.Time) {
	counts := make(map[string]int32, len(pg.Spec.Roles))
	for _, r := range pg.Spec.Roles {
		counts[r.Name] = r.Count
	}
	var names []string
	for _, p := range pods {
		why := roleDisagreement(p, counts)
		if why == "" {
			continue
		}
		names = append(names, p.Name)
		c.warnOnce(p.UID, scheduling.EventRolesMismatch, func() {
			c.recorder.Eventf(p, corev1.EventTypeWarning, scheduling.EventRolesMismatch, "disagrees with PodGroup %s: %s", pg.Name, why)
		})
	}
	if len(names) > 0 {
		sort.Strings(names)
		setCondition(pg, v1alpha1.ConditionRoleMismatch, metav1.ConditionTrue, scheduling.ReasonPodsDisagree,
			truncate(fmt.Sprintf("%d pod(s) disagree with spec.roles: %s", len(names), strings.Join(names, ", "))), now)
	} else if meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionRoleMismatch) != nil {
		setCondition(pg, v1alpha1.ConditionRoleMismatch, metav1.ConditionFalse, scheduling.ReasonPodsAgree, "every pod agrees with spec.roles", now)
	}
}

// roleDisagreement says how a pod disagrees with the group's roles (name to
// count), or "" when it does not.
func roleDisagreement(p *corev1.Pod, counts map[string]int32) string {
	role, hasRole := p.Labels[scheduling.RoleLabel]
	if len(counts) == 0 {
		if _, has := p.Annotations[scheduling.RolesAnnotation]; has {
			return fmt.Sprintf("annotation %s is set, but the group has no spec.roles", scheduling.RolesAnnotation)
		}
		return ""
	}
	want, known := counts[role]
	if !hasRole || !known {
		return fmt.Sprintf("label %s=%q names no role of spec.roles", scheduling.RoleLabel, role)
	}
	if v, has := p.Annotations[scheduling.RolesAnnotation]; has {
		if n, ok := scheduling.ParseRoles(v); !ok || int(n) != len(counts) {
			return fmt.Sprintf("annotation %s=%q, but spec.roles has %d roles", scheduling.RolesAnnotation, v, len(counts))
		}
	}
	if v, has := p.Annotations[scheduling.RoleCountAnnotation]; has {
		if n, ok := scheduling.RoleCount(p.Annotations); !ok || n != want {
			return fmt.Sprintf("annotation %s=%q, but role %s has count %d", scheduling.RoleCountAnnotation, v, role, want)
		}
	}
	return ""
}

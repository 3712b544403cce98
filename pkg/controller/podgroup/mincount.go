package podgroup

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	schedulingvalidation "github.com/muster-dev/muster/pkg/apis/scheduling/validation"
)

// checkMinCountAnnotations is step 3: it tells pods whose min-count
// annotation disagrees with their group's minCount, or whose topology
// annotations disagree with its schedulingConstraints
// (checkTopologyAnnotations): all pods of a group must agree.
func (c *Controller) checkMinCountAnnotations(pg *v1alpha1.PodGroup, pods []*corev1.Pod) {
	c.checkTopologyAnnotations(pg, pods)
	want := minCount(pg)
	for _, p := range pods {
		v, has := p.Annotations[scheduling.MinCountAnnotation]
		if !has {
			continue
		}
		// Compare numbers: the webhook accepts "08" and "+8" as 8.
		if n, ok := scheduling.ParseMinCount(v); ok && n == want {
			continue
		}
		c.warnOnce(p.UID, scheduling.EventMinCountMismatch, func() {
			c.recorder.Eventf(p, corev1.EventTypeWarning, scheduling.EventMinCountMismatch,
				"annotation %s=%s disagrees with PodGroup %s, whose minCount is %d; all pods of a group must agree", scheduling.MinCountAnnotation, v, pg.Name, want)
		})
	}
}

// checkTopologyAnnotations tells pods whose topology annotations ask for
// other schedulingConstraints than their group's, or are invalid: the
// group places every pod by its own. Pods without them are not compared.
func (c *Controller) checkTopologyAnnotations(pg *v1alpha1.PodGroup, pods []*corev1.Pod) {
	var want *scheduling.PodGroupSchedulingConstraints
	converted := false
	for _, p := range pods {
		if !scheduling.HasTopologyAnnotations(p.Annotations) {
			continue
		}
		if !converted {
			converted = true
			want = groupConstraints(pg)
		}
		got, err := schedulingvalidation.TopologyFromAnnotations(p.Annotations)
		if err == nil && apiequality.Semantic.DeepEqual(got, want) {
			continue
		}
		group := "which has no spec.schedulingConstraints"
		if want != nil {
			group = "whose spec.schedulingConstraints are those of the annotations " + topologyText(scheduling.TopologyAnnotationsFor(want))
		}
		msg := fmt.Sprintf("annotations %s disagree with PodGroup %s, %s; all pods of a group must agree", topologyText(p.Annotations), pg.Name, group)
		if err != nil {
			msg = fmt.Sprintf("%s (they are invalid: %v)", msg, err)
		}
		c.warnOnce(p.UID, scheduling.EventTopologyMismatch, func() {
			c.recorder.Event(p, corev1.EventTypeWarning, scheduling.EventTopologyMismatch, msg)
		})
	}
}

// groupConstraints is pg's spec.schedulingConstraints as the annotations
// are read, nil when it asks for nothing.
func groupConstraints(pg *v1alpha1.PodGroup) *scheduling.PodGroupSchedulingConstraints {
	in := pg.Spec.SchedulingConstraints
	if in == nil {
		return nil
	}
	out := &scheduling.PodGroupSchedulingConstraints{}
	if err := v1alpha1.Convert_v1alpha1_PodGroupSchedulingConstraints_To_scheduling_PodGroupSchedulingConstraints(in, out, nil); err != nil {
		return nil // the generated conversion of these fields never fails.
	}
	if !scheduling.HasSchedulingConstraints(out) {
		return nil
	}
	return out
}

// topologyText lists the topology annotations in ann, in a fixed order,
// as key="value".
func topologyText(ann map[string]string) string {
	var kv []string
	for _, k := range scheduling.TopologyAnnotations {
		if v, ok := ann[k]; ok {
			kv = append(kv, fmt.Sprintf("%s=%q", k, v))
		}
	}
	return strings.Join(kv, " ")
}

// minCountTooLarge is step 6's bound on a gang (issue 21, item 3): a gang
// of more than MaxGangMinCount pods could never be admitted, since its
// placements would not fit in status.placements. Such a group gets
// Admitted=False/MinCountTooLarge naming the field and the rule, in both
// admission modes, instead of a decision whose status write is refused.
func minCountTooLarge(pg *v1alpha1.PodGroup) *notAdmitted {
	n := minCount(pg)
	if n <= scheduling.MaxGangMinCount {
		return nil
	}
	err := field.Invalid(field.NewPath("spec", "schedulingPolicy", "gang", "minCount"), n,
		fmt.Sprintf("must be at most %d (MaxGangMinCount): a gang is admitted with its placements recorded in status.placements, which holds at most %d; lower minCount (or the pods' %s annotation) to admit it",
			scheduling.MaxGangMinCount, scheduling.MaxPlacements, scheduling.MinCountAnnotation))
	return warning(scheduling.ReasonMinCountTooLarge, err.Error(), scheduling.EventWaiting)
}

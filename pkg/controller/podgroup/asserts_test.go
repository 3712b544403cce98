package podgroup

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

func gatePatch(p *corev1.Pod, index int) string {
	return fmt.Sprintf(`[{"op":"test","path":"/metadata/uid","value":%q},`+
		`{"op":"test","path":"/spec/schedulingGates/%d/name","value":%q},`+
		`{"op":"remove","path":"/spec/schedulingGates/%d"}]`, p.UID, index, scheduling.AdmissionGate, index)
}

func finalizerPatch(p *corev1.Pod, index int) string {
	return fmt.Sprintf(`[{"op":"test","path":"/metadata/uid","value":%q},`+
		`{"op":"test","path":"/metadata/finalizers/%d","value":%q},`+
		`{"op":"remove","path":"/metadata/finalizers/%d"}]`, p.UID, index, scheduling.TrackingFinalizer, index)
}

// countedFinalizerPatch is finalizerPatch of a pod counted with result in
// the group of UID group, which also labels the pod so.
func countedFinalizerPatch(p *corev1.Pod, index int, result corev1.PodPhase, group types.UID) string {
	return strings.TrimSuffix(finalizerPatch(p, index), "]") +
		fmt.Sprintf(`,{"op":"add","path":"/metadata/labels/scheduling.muster.dev~1counted","value":"%s.%s"}]`, result, group)
}

func gateNames(p *corev1.Pod) []string {
	var out []string
	for _, g := range p.Spec.SchedulingGates {
		out = append(out, g.Name)
	}
	return out
}

func cond(pg *v1alpha1.PodGroup, typ string) *metav1.Condition {
	return meta.FindStatusCondition(pg.Status.Conditions, typ)
}

// wantCondition checks a condition's status, reason and, if given, message.
func wantCondition(t *testing.T, pg *v1alpha1.PodGroup, typ string, status metav1.ConditionStatus, reason, message string) {
	t.Helper()
	c := cond(pg, typ)
	if c == nil {
		t.Errorf("condition %s missing; conditions: %+v", typ, pg.Status.Conditions)
		return
	}
	if c.Status != status || c.Reason != reason || (message != "" && c.Message != message) {
		t.Errorf("condition %s = %s/%s %q, want %s/%s %q", typ, c.Status, c.Reason, c.Message, status, reason, message)
	}
}

func wantNoCondition(t *testing.T, pg *v1alpha1.PodGroup, typ string) {
	t.Helper()
	if c := cond(pg, typ); c != nil {
		t.Errorf("condition %s = %s/%s %q, want none", typ, c.Status, c.Reason, c.Message)
	}
}

func wantTime(t *testing.T, what string, got *metav1.Time, want time.Time) {
	t.Helper()
	if got == nil {
		t.Errorf("%s is unset, want %s", what, want)
		return
	}
	if !got.Time.Equal(want) {
		t.Errorf("%s = %s, want %s", what, got.Time, want)
	}
}

func wantUncounted(t *testing.T, pg *v1alpha1.PodGroup, succeeded, failed []types.UID) {
	t.Helper()
	var gotS, gotF []types.UID
	if u := pg.Status.UncountedTerminatedPods; u != nil {
		gotS, gotF = u.Succeeded, u.Failed
	}
	if !slices.Equal(gotS, succeeded) || !slices.Equal(gotF, failed) {
		t.Errorf("uncountedTerminatedPods = {succeeded: %v, failed: %v}, want {succeeded: %v, failed: %v}", gotS, gotF, succeeded, failed)
	}
}

func wantCounts(t *testing.T, pg *v1alpha1.PodGroup, succeeded, failed int32) {
	t.Helper()
	if pg.Status.Succeeded != succeeded || pg.Status.Failed != failed {
		t.Errorf("succeeded/failed = %d/%d, want %d/%d", pg.Status.Succeeded, pg.Status.Failed, succeeded, failed)
	}
}

// wantEvents checks that exactly these events were recorded, in any order.
func wantEvents(t *testing.T, got []string, want ...string) {
	t.Helper()
	g, w := slices.Clone(got), slices.Clone(want)
	slices.Sort(g)
	slices.Sort(w)
	if !slices.Equal(g, w) {
		t.Errorf("events:\n got %q\nwant %q", g, w)
	}
}

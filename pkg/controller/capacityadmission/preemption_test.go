package capacityadmission

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/admission"
	"github.com/muster-dev/muster/pkg/controller/capacity"
)

// TestPreemptionDecisionNamesOnlyItsNamespace: the recorded preemption
// names a victim in the preemptor's own namespace, and records any other
// by ref alone, with no namespace, name or UID; the condition message
// (the cycle's verdict message) is kept as the cycle wrote it.
func TestPreemptionDecisionNamesOnlyItsNamespace(t *testing.T) {
	pg := &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "high"}}
	g := admission.Group{Key: scheduling.NewGroupKey("team-a", "high"), PodGroup: pg}
	d := capacity.Verdict{Key: g.Key, Cause: capacity.CausePreempting, Message: "preempting 3 of lower priority to fit", Victims: []*capacity.Victim{
		{Key: "team-a/low", Kind: scheduling.VictimKindPodGroup, UID: "uid-low", Priority: 1},
		{Key: "team-b/theirs", Kind: scheduling.VictimKindPodGroup, UID: "uid-theirs", Priority: 2},
		{Key: "kube-system/dns", Kind: scheduling.VictimKindPod, UID: "uid-dns", Priority: 3},
	}}
	out := preemptionDecision(g, d, time.Unix(100, 0))
	want := []v1alpha1.PreemptionVictim{
		{Kind: scheduling.VictimKindPodGroup, Namespace: "team-a", Name: "low", UID: "uid-low", Priority: 1},
		{Kind: scheduling.VictimKindPodGroup, Ref: scheduling.VictimRef("uid-theirs"), Priority: 2},
		{Kind: scheduling.VictimKindPod, Ref: scheduling.VictimRef("uid-dns"), Priority: 3},
	}
	if diff := cmp.Diff(want, out.Preemption.Victims); diff != "" {
		t.Errorf("recorded victims (-want +got):\n%s", diff)
	}
	for _, v := range out.Preemption.Victims[1:] {
		if !scheduling.IsVictimRef(v.Ref) || strings.Contains(v.Ref, "uid-") {
			t.Errorf("ref %q is not an opaque VictimRef", v.Ref)
		}
	}
}

// TestResolveVictim: a victim recorded by ref is found from this replica's
// memory of its decisions, or else among the groups the tracker knows (a
// new leader); a ref of a victim that is gone is not found.
func TestResolveVictim(t *testing.T) {
	tr := capacity.NewTracker(false)
	tr.SetGroupState(scheduling.NewGroupKey("team-b", "known"), &capacity.GroupState{UID: "uid-known", Admitted: true})
	a := &Mode{tracker: tr}
	a.victimRefs.remember([]*capacity.Victim{{Key: "team-b/decided", Kind: scheduling.VictimKindPodGroup, UID: "uid-decided"}})
	byRef := func(uid string) v1alpha1.PreemptionVictim {
		return v1alpha1.PreemptionVictim{Kind: scheduling.VictimKindPodGroup, Ref: scheduling.VictimRef(k8stypes.UID(uid)), Priority: 1}
	}
	tests := []struct {
		name   string
		victim v1alpha1.PreemptionVictim
		want   string // namespace/name/uid, or "" for not found
	}{
		{"a victim recorded by name is as recorded", v1alpha1.PreemptionVictim{Kind: scheduling.VictimKindPodGroup, Namespace: "team-a", Name: "low", UID: "uid-low"}, "team-a/low/uid-low"},
		{"a ref this replica decided is remembered", byRef("uid-decided"), "team-b/decided/uid-decided"},
		{"a ref a leader before decided is found in the tracker", byRef("uid-known"), "team-b/known/uid-known"},
		{"a ref of a victim that is gone is not found", byRef("uid-gone"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := a.ResolveVictim(tc.victim)
			s := ""
			if ok {
				s = got.Namespace + "/" + got.Name + "/" + string(got.UID)
			}
			if s != tc.want {
				t.Errorf("ResolveVictim = %q (ok %v), want %q", s, ok, tc.want)
			}
		})
	}
}

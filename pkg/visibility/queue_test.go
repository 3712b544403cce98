package visibility

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/controller/capacityadmission"
)

func queued(ns, name string, prio int32, pods int) capacityadmission.Queued {
	return capacityadmission.Queued{Key: scheduling.NewGroupKey(ns, name), Priority: prio, Pods: pods, Need: pods, Created: time.Unix(1000, 0)}
}

// TestPending: a namespace's view of the queue has its own gangs alone,
// each with its place among all and the others ahead of it counted by
// priority, never named; the view of all has every gang.
func TestPending(t *testing.T) {
	q := []capacityadmission.Queued{
		queued("b", "urgent", 1000, 8),
		queued("a", "first", 100, 2),
		queued("b", "mid", 100, 4),
		queued("c", "other", 0, 1),
		queued("a", "second", 0, 3),
	}
	type row struct {
		ns, name string
		pos      int32
		others   []v1alpha1.QueuedCount
	}
	tests := []struct {
		name      string
		namespace string
		want      []row
	}{
		{name: "a tenant's own gangs", namespace: "a", want: []row{
			{"a", "first", 2, []v1alpha1.QueuedCount{{Priority: 1000, Gangs: 1, Pods: 8}}},
			{"a", "second", 5, []v1alpha1.QueuedCount{{Priority: 1000, Gangs: 1, Pods: 8}, {Priority: 100, Gangs: 1, Pods: 4}, {Priority: 0, Gangs: 1, Pods: 1}}},
		}},
		{name: "a namespace with nothing queued", namespace: "d"},
		{name: "all namespaces", namespace: "", want: []row{
			{"b", "urgent", 1, nil},
			{"a", "first", 2, []v1alpha1.QueuedCount{{Priority: 1000, Gangs: 1, Pods: 8}}},
			{"b", "mid", 3, []v1alpha1.QueuedCount{{Priority: 100, Gangs: 1, Pods: 2}}},
			{"c", "other", 4, []v1alpha1.QueuedCount{{Priority: 1000, Gangs: 1, Pods: 8}, {Priority: 100, Gangs: 2, Pods: 6}}},
			{"a", "second", 5, []v1alpha1.QueuedCount{{Priority: 1000, Gangs: 1, Pods: 8}, {Priority: 100, Gangs: 1, Pods: 4}, {Priority: 0, Gangs: 1, Pods: 1}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := pending(q, tt.namespace)
			var rows []row
			for _, p := range got {
				if p.Queue.Waiting != 5 {
					t.Errorf("%s: waiting %d, want 5", p.Name, p.Queue.Waiting)
				}
				if len(p.Queue.Ahead) != 0 {
					t.Errorf("%s: a list names the gangs ahead: %v", p.Name, p.Queue.Ahead)
				}
				rows = append(rows, row{p.Namespace, p.Name, p.Queue.Position, p.Queue.AheadElsewhere})
			}
			if !reflect.DeepEqual(rows, tt.want) {
				t.Errorf("pending(%q) =\n%+v\nwant\n%+v", tt.namespace, rows, tt.want)
			}
		})
	}
}

// TestPositionOf: a what-if names the gangs of its own namespace ahead of
// it and counts the others.
func TestPositionOf(t *testing.T) {
	w := capacityadmission.WhatIf{Position: 4, Waiting: 6, AheadQueued: []capacityadmission.Queued{
		queued("b", "urgent", 1000, 8), queued("a", "first", 100, 2), queued("c", "x", 1000, 1),
	}}
	got := positionOf("a", w)
	want := v1alpha1.QueuePosition{Position: 4, Waiting: 6, Ahead: []string{"first"},
		AheadElsewhere: []v1alpha1.QueuedCount{{Priority: 1000, Gangs: 2, Pods: 9}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("positionOf = %+v, want %+v", got, want)
	}
}

// allowIn is an authorizer that lets anyone get pods in the namespaces
// given, and nothing else.
func allowIn(namespaces ...string) authorizer.Authorizer {
	return authorizer.AuthorizerFunc(func(_ context.Context, attr authorizer.Attributes) (authorizer.Decision, string, error) {
		if attr.GetVerb() == "get" && attr.GetResource() == "pods" && slices.Contains(namespaces, attr.GetNamespace()) {
			return authorizer.DecisionAllow, "", nil
		}
		return authorizer.DecisionNoOpinion, "", nil
	})
}

// TestRedact: a victim is named only in the review's namespace and where
// the caller may get pods; elsewhere it keeps its size and priority.
func TestRedact(t *testing.T) {
	tests := []struct {
		name  string
		authz authorizer.Authorizer
		user  bool
		want  []v1alpha1.WhatIfPreemption
	}{
		{name: "may read one other namespace", authz: allowIn("b"), user: true, want: []v1alpha1.WhatIfPreemption{
			{Namespace: "a", PodGroup: "mine", Pods: 2, Priority: 1},
			{Namespace: "b", PodGroup: "readable", Pods: 3, Priority: 2},
			{Pods: 4, Priority: 3},
		}},
		{name: "no caller", authz: allowIn("b", "c"), want: []v1alpha1.WhatIfPreemption{
			{Namespace: "a", PodGroup: "mine", Pods: 2, Priority: 1},
			{Pods: 3, Priority: 2},
			{Pods: 4, Priority: 3},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewService(nil, tt.authz)
			st := &v1alpha1.WhatIfReviewStatus{Preemptions: []v1alpha1.WhatIfPreemption{
				{Namespace: "a", PodGroup: "mine", Pods: 2, Priority: 1},
				{Namespace: "b", PodGroup: "readable", Pods: 3, Priority: 2},
				{Namespace: "c", PodGroup: "hidden", Pods: 4, Priority: 3},
			}}
			ctx := context.Background()
			if tt.user {
				ctx = genericapirequest.WithUser(ctx, &user.DefaultInfo{Name: "alice"})
			}
			s.redact(ctx, "a", st)
			if !reflect.DeepEqual(st.Preemptions, tt.want) {
				t.Errorf("redacted = %+v, want %+v", st.Preemptions, tt.want)
			}
		})
	}
}

// TestForwardedOnce: a replica that does not lead and got the request
// from another replica answers 503 rather than forward it again.
func TestForwardedOnce(t *testing.T) {
	s := NewService(nil, nil)
	ctx := context.WithValue(context.Background(), forwardedKey{}, true)
	if _, err := s.Queue(ctx, "a"); err == nil {
		t.Fatal("a forwarded request was answered by a replica that does not lead")
	}
}

func TestAddressOf(t *testing.T) {
	for id, want := range map[string]string{
		Identity("muster-7d9f", "10.0.0.7:443", "0b6e"): "10.0.0.7:443",
		Identity("host", "[fd00::7]:6443", "0b6e"):      "[fd00::7]:6443",
		"muster-7d9f_0b6e":                              "",
		"":                                              "",
	} {
		if got := addressOf(id); got != want {
			t.Errorf("addressOf(%q) = %q, want %q", id, got, want)
		}
	}
}

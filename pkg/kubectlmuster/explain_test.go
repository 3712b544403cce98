package kubectlmuster

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	musterfake "github.com/muster-dev/muster/pkg/generated/clientset/versioned/fake"
)

func TestPodGroupName(t *testing.T) {
	tests := []struct {
		args    []string
		want    string
		wantErr string
	}{
		{[]string{"pg", "train"}, "train", ""},
		{[]string{"podgroup", "train"}, "train", ""},
		{[]string{"podgroups.scheduling.muster.dev", "train"}, "train", ""},
		{[]string{"pg/train"}, "train", ""},
		{[]string{"PodGroup/train"}, "train", ""},
		{[]string{"pod", "train"}, "", `not "pod"`},
		{[]string{"pg"}, "", "needs the PodGroup's name"},
		{[]string{"pg/"}, "", "needs the PodGroup's name"},
	}
	for _, tt := range tests {
		got, err := podGroupName(tt.args)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("podGroupName(%q) error %v, want one saying %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("podGroupName(%q) = %q, %v; want %q", tt.args, got, err, tt.want)
		}
	}
}

func TestExplainQueue(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train", UID: "u1", CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))},
		Spec:       v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 4}}},
		Status: v1alpha1.PodGroupStatus{Phase: v1alpha1.PodGroupPending, Conditions: []metav1.Condition{{
			Type: v1alpha1.ConditionAdmitted, Status: metav1.ConditionFalse, Reason: scheduling.ReasonInsufficientCapacity, LastTransitionTime: metav1.NewTime(now.Add(-time.Minute)),
		}}},
	}
	queued := &v1alpha1.PendingPodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "train"},
		Queue: v1alpha1.QueuePosition{Position: 2, Waiting: 5, Ahead: []string{"etl"},
			AheadElsewhere: []v1alpha1.QueuedCount{{Priority: 1000, Gangs: 1, Pods: 8}}},
	}
	pendingpodgroups := v1alpha1.Resource("pendingpodgroups")
	tests := []struct {
		name string
		// seed are the muster objects the fake holds; getErr, when set, is
		// what a GET of the PendingPodGroup answers.
		seed     []runtime.Object
		getErr   error
		wantLine string
	}{
		{"queued: its position, and who is ahead", []runtime.Object{pg, queued}, nil,
			"Queue:                   position 2 of 5; ahead: etl in this namespace; 1 gang elsewhere: 1 at priority 1000 (8 pods)\n"},
		{"not in the queue: no line", []runtime.Object{pg}, nil, ""},
		{"a server that serves no queue: no line, no error", []runtime.Object{pg},
			apierrors.NewGenericServerResponse(http.StatusNotFound, "get", pendingpodgroups, "train", "404 page not found", 0, true), ""},
		{"a queue the caller may not read: said, and the rest stands", []runtime.Object{pg},
			apierrors.NewForbidden(pendingpodgroups, "train", fmt.Errorf("RBAC")),
			"Queue:                   <unknown>: pendingpodgroups.scheduling.muster.dev \"train\" is forbidden: RBAC\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			muster := musterfake.NewSimpleClientset(tt.seed...)
			if tt.getErr != nil {
				muster.PrependReactor("get", "pendingpodgroups", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, tt.getErr
				})
			}
			c := &clients{kube: kubefake.NewClientset(), muster: muster, namespace: "team-a"}
			var out bytes.Buffer
			if err := explain(context.Background(), c, "train", &out, now); err != nil {
				t.Fatalf("explain: %v", err)
			}
			var got string
			for _, line := range strings.SplitAfter(out.String(), "\n") {
				if strings.HasPrefix(line, "Queue:") {
					got += line
				}
			}
			if got != tt.wantLine {
				t.Errorf("queue line %q, want %q; all:\n%s", got, tt.wantLine, out.String())
			}
			if !strings.Contains(out.String(), "Events:") {
				t.Errorf("explain stopped short:\n%s", out.String())
			}
		})
	}
}

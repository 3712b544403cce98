package apiserver

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/test/integration/framework"
)

// TestBadInput sends malformed and invalid requests over raw HTTP and checks
// the status code, that the message names the field and rule, and that
// nothing was written.
func TestBadInput(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	raw, err := s.RawClient()
	if err != nil {
		t.Fatal(err)
	}
	const path = "/apis/scheduling.muster.dev/v1alpha1/namespaces/default/podgroups"
	tests := []struct {
		name        string
		contentType string
		body        string
		params      map[string]string
		check       func(error) bool
		wantCode    int
		wantMessage string
	}{
		{"malformed JSON", "application/json", `{"apiVersion":"scheduling.muster.dev/v1alpha1","kind":"PodGroup",`, nil, apierrors.IsBadRequest, 400, ""},
		{"malformed YAML", "application/yaml", "apiVersion: scheduling.muster.dev/v1alpha1\nkind: PodGroup\nmetadata: [name: x\n", nil, apierrors.IsBadRequest, 400, ""},
		{"a broken rule", "application/json", `{"apiVersion":"scheduling.muster.dev/v1alpha1","kind":"PodGroup","metadata":{"name":"bad"},"spec":{"schedulingPolicy":{"gang":{"minCount":0}}}}`, nil,
			apierrors.IsInvalid, 422, "spec.schedulingPolicy.gang.minCount: Invalid value: 0: must be greater than or equal to 1"},
		{"a name that is not a DNS subdomain", "application/json", `{"apiVersion":"scheduling.muster.dev/v1alpha1","kind":"PodGroup","metadata":{"name":"Bad_Name"},"spec":{"schedulingPolicy":{"basic":{}}}}`, nil,
			apierrors.IsInvalid, 422, "metadata.name: Invalid value: \"Bad_Name\""},
		{"an unknown field under Strict", "application/json", `{"apiVersion":"scheduling.muster.dev/v1alpha1","kind":"PodGroup","metadata":{"name":"bad"},"spec":{"schedulingPolicy":{"basic":{}},"minMembers":3}}`,
			map[string]string{"fieldValidation": "Strict"}, apierrors.IsBadRequest, 400, `unknown field "spec.minMembers"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := raw.Post().AbsPath(path).SetHeader("Content-Type", tc.contentType).Body([]byte(tc.body))
			for k, v := range tc.params {
				req = req.Param(k, v)
			}
			err := req.Do(ctx).Error()
			if !tc.check(err) {
				t.Fatalf("error = %v, want HTTP %d", err, tc.wantCode)
			}
			if status, ok := err.(apierrors.APIStatus); !ok || int(status.Status().Code) != tc.wantCode {
				t.Fatalf("error = %v, want HTTP %d", err, tc.wantCode)
			}
			if tc.wantMessage != "" && !contains(err.Error(), tc.wantMessage) {
				t.Errorf("message %q does not say %q", err.Error(), tc.wantMessage)
			}
			list, err := s.Client.SchedulingV1alpha1().PodGroups(ns).List(ctx, metav1.ListOptions{})
			if err != nil || len(list.Items) != 0 {
				t.Errorf("after a rejected request: %v, %d PodGroups stored, want 0", err, len(list.Items))
			}
		})
	}
}

// TestStaleResourceVersion checks optimistic concurrency: an update based on
// an old resourceVersion gets 409 and does not overwrite the newer write.
func TestStaleResourceVersion(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	pgs := s.Client.SchedulingV1alpha1().PodGroups(ns)
	stale, err := pgs.Create(ctx, gangGroup("race", 2), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := pgs.Patch(ctx, "race", types.MergePatchType, []byte(`{"spec":{"schedulingPolicy":{"gang":{"minCount":3}}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch: %v", err)
	}
	stale.Spec.SchedulingPolicy.Gang.MinCount = 9
	if _, err := pgs.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale update: %v, want 409 Conflict", err)
	}
	if _, err := pgs.UpdateStatus(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Fatalf("stale status update: %v, want 409 Conflict", err)
	}
	got, err := pgs.Get(ctx, "race", metav1.GetOptions{})
	if err != nil || got.Spec.SchedulingPolicy.Gang.MinCount != 3 {
		t.Fatalf("after stale writes: %v minCount=%d, want 3", err, got.Spec.SchedulingPolicy.Gang.MinCount)
	}
}

func contains(s, sub string) bool {
	return strings.Contains(s, sub)
}

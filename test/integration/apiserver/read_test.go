package apiserver

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/integration/framework"
)

// TestFieldSelectors lists PodGroups by workload name and by phase.
func TestFieldSelectors(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	client := s.Client.SchedulingV1alpha1()
	if _, err := client.Workloads(ns).Create(ctx, workload("job", gangTemplate("workers", 2, nil)), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create workload: %v", err)
	}
	fromJob := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "from-job", Namespace: ns},
		Spec:       v1alpha1.PodGroupSpec{WorkloadRef: &v1alpha1.WorkloadReference{WorkloadName: "job", TemplateName: "workers"}},
	}
	for _, pg := range []*v1alpha1.PodGroup{fromJob, gangGroup("plain", 2), gangGroup("held", 2, "example.com/hold")} {
		if _, err := client.PodGroups(ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", pg.Name, err)
		}
	}
	tests := []struct {
		selector string
		want     []string
	}{
		{"spec.workloadRef.workloadName=job", []string{"from-job"}},
		{"spec.workloadRef.workloadName!=job", []string{"held", "plain"}},
		{"status.phase=Gated", []string{"held"}},
		{"status.phase=Pending", []string{"from-job", "plain"}},
		{"status.phase=Pending,spec.workloadRef.workloadName=job", []string{"from-job"}},
		{"metadata.name=plain", []string{"plain"}},
	}
	for _, tc := range tests {
		t.Run(tc.selector, func(t *testing.T) {
			list, err := client.PodGroups(ns).List(ctx, metav1.ListOptions{FieldSelector: tc.selector})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			var names []string
			for _, pg := range list.Items {
				names = append(names, pg.Name)
			}
			if strings.Join(names, ",") != strings.Join(tc.want, ",") {
				t.Errorf("got %v, want %v", names, tc.want)
			}
		})
	}
	_, err := client.PodGroups(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.priority=1"})
	if !apierrors.IsBadRequest(err) {
		t.Errorf("unsupported field selector: %v, want 400", err)
	}
}

// TestTableOutput asks for the server-side Table that kubectl prints.
func TestTableOutput(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	if _, err := s.Client.SchedulingV1alpha1().PodGroups(ns).Create(ctx, gangGroup("gang", 8, "example.com/hold"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := s.Client.SchedulingV1alpha1().Workloads(ns).Create(ctx, workload("job", gangTemplate("workers", 2, nil), gangTemplate("ps", 1, nil)), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create workload: %v", err)
	}
	raw, err := s.RawClient()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		resource    string
		wantColumns []string
		wantCells   []interface{}
	}{
		{"podgroups", []string{"Name", "Policy", "Min", "Pods", "Scheduled", "Succeeded", "Failed", "Phase", "Age", "Workload", "Gates", "Priority", "Roles", "Domain"},
			[]interface{}{"gang", "Gang", float64(8), float64(0), float64(0), float64(0), float64(0), "Gated"}},
		{"workloads", []string{"Name", "Templates", "Age", "Controller"}, []interface{}{"job", "workers,ps"}},
	}
	for _, tc := range tests {
		t.Run(tc.resource, func(t *testing.T) {
			table := getTable(ctx, t, raw, tc.resource)
			var cols []string
			for _, c := range table.ColumnDefinitions {
				cols = append(cols, c.Name)
			}
			if strings.Join(cols, ",") != strings.Join(tc.wantColumns, ",") {
				t.Errorf("columns = %v, want %v", cols, tc.wantColumns)
			}
			if len(table.Rows) != 1 {
				t.Fatalf("%d rows, want 1", len(table.Rows))
			}
			for i, want := range tc.wantCells {
				if got := table.Rows[0].Cells[i]; got != want {
					t.Errorf("cell %s = %v, want %v", tc.wantColumns[i], got, want)
				}
			}
		})
	}
}

// getTable gets the namespace's objects of resource as kubectl get does.
func getTable(ctx context.Context, t *testing.T, raw *rest.RESTClient, resource string) metav1.Table {
	t.Helper()
	body, err := raw.Get().AbsPath("/apis/scheduling.muster.dev/v1alpha1/namespaces", ns, resource).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatalf("get table: %v", err)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatalf("decoding table: %v", err)
	}
	return table
}

// TestOpenAPI checks that OpenAPI v3 and v2 describe both kinds, which
// kubectl explain and server-side apply rely on.
func TestOpenAPI(t *testing.T) {
	ctx := testContext(t)
	s := framework.StartServer(t)
	raw, err := s.RawClient()
	if err != nil {
		t.Fatal(err)
	}
	index, err := raw.Get().AbsPath("/openapi/v3").DoRaw(ctx)
	if err != nil {
		t.Fatalf("get /openapi/v3: %v", err)
	}
	var paths struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(index, &paths); err != nil {
		t.Fatalf("decoding index: %v", err)
	}
	gv, ok := paths.Paths["apis/scheduling.muster.dev/v1alpha1"]
	if !ok {
		t.Fatalf("/openapi/v3 has no apis/scheduling.muster.dev/v1alpha1: %s", index)
	}
	doc, err := raw.Get().AbsPath(strings.Split(gv.ServerRelativeURL, "?")[0]).DoRaw(ctx)
	if err != nil {
		t.Fatalf("get group document: %v", err)
	}
	var v3 struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
				GVK        []map[string]string        `json:"x-kubernetes-group-version-kind"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(doc, &v3); err != nil {
		t.Fatalf("decoding group document: %v", err)
	}
	for _, kind := range []string{"PodGroup", "Workload"} {
		name := "dev.muster.scheduling.v1alpha1." + kind
		schema, ok := v3.Components.Schemas[name]
		if !ok {
			t.Errorf("OpenAPI v3 has no schema %s", name)
			continue
		}
		if len(schema.GVK) != 1 || schema.GVK[0]["kind"] != kind || schema.GVK[0]["group"] != "scheduling.muster.dev" {
			t.Errorf("%s x-kubernetes-group-version-kind = %v", name, schema.GVK)
		}
	}
	if _, ok := v3.Components.Schemas["dev.muster.scheduling.v1alpha1.PodGroupSpec"].Properties["schedulingGates"]; !ok {
		t.Errorf("PodGroupSpec schema has no schedulingGates property")
	}

	v2, err := raw.Get().AbsPath("/openapi/v2").DoRaw(ctx)
	if err != nil {
		t.Fatalf("get /openapi/v2: %v", err)
	}
	for _, kind := range []string{"PodGroup", "Workload"} {
		if !strings.Contains(string(v2), `"dev.muster.scheduling.v1alpha1.`+kind+`"`) {
			t.Errorf("OpenAPI v2 has no definition of %s", kind)
		}
	}
}

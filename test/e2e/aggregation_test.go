package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	"github.com/muster-dev/muster/test/chart"
	"github.com/muster-dev/muster/test/cluster"
)

// TestAPIServiceAvailable checks the aggregator's view of Muster: Available,
// and trusted through caBundle rather than insecureSkipTLSVerify.
func TestAPIServiceAvailable(t *testing.T) {
	ctx := testContext(t, time.Minute)
	dyn := dynamic.NewForConfigOrDie(env.Config)
	gvr := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	svc, err := dyn.Resource(gvr).Get(ctx, cluster.MusterAPIServiceName, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get APIService: %v", err)
	}
	if skip, _, _ := unstructured.NestedBool(svc.Object, "spec", "insecureSkipTLSVerify"); skip {
		t.Errorf("APIService skips TLS verification")
	}
	if ca, _, _ := unstructured.NestedString(svc.Object, "spec", "caBundle"); ca == "" {
		t.Errorf("APIService has no caBundle")
	}
	conds, _, _ := unstructured.NestedSlice(svc.Object, "status", "conditions")
	available := false
	for _, c := range conds {
		m := c.(map[string]interface{})
		if m["type"] == "Available" && m["status"] == "True" {
			available = true
		}
	}
	if !available {
		t.Errorf("APIService conditions = %v, want Available=True", conds)
	}
}

// TestKubectl checks what a user sees through the aggregator: the table
// columns of get and get -o wide, explain, and server-side apply.
func TestKubectl(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns := namespace(t, ctx)
	manifest := filepath.Join(t.TempDir(), "pg.yaml")
	if err := os.WriteFile(manifest, []byte(`apiVersion: scheduling.muster.dev/v1alpha1
kind: PodGroup
metadata:
  name: trainer
  namespace: `+ns+`
spec:
  schedulingPolicy:
    gang:
      minCount: 4
  schedulingGates:
  - name: example.com/approval
`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := env.Kubectl(ctx, "apply", "--server-side", "--field-manager=e2e", "-f", manifest)
	if err != nil || !strings.Contains(string(out), "serverside-applied") {
		t.Fatalf("kubectl apply --server-side: %v: %s", err, out)
	}
	pg, err := getGroup(ctx, ns, "trainer")
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	applied := false
	for _, m := range pg.ManagedFields {
		applied = applied || (m.Manager == "e2e" && m.Operation == metav1.ManagedFieldsOperationApply)
	}
	if !applied {
		t.Errorf("managedFields = %+v, want an Apply entry of manager e2e", pg.ManagedFields)
	}

	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"get", "podgroups", "-n", ns}, []string{"NAME", "POLICY", "MIN", "PODS", "SCHEDULED", "SUCCEEDED", "FAILED", "PHASE", "AGE", "trainer", "Gang", "Gated"}},
		{[]string{"get", "pg", "-o", "wide", "-n", ns}, []string{"WORKLOAD", "GATES", "PRIORITY", "example.com/approval"}},
		{[]string{"get", "muster", "-n", ns}, []string{"podgroup.scheduling.muster.dev/trainer"}},
		{[]string{"explain", "podgroups.spec"}, []string{"schedulingGates", "schedulingPolicy", "workloadRef"}},
		{[]string{"explain", "podgroups.spec.schedulingGates"}, []string{"only removed", "name"}},
		{[]string{"get", "pg", "-n", ns, "--field-selector", "status.phase=Gated", "-o", "name"}, []string{"podgroup.scheduling.muster.dev/trainer"}},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args[:2], " "), func(t *testing.T) {
			out, err := env.Kubectl(ctx, tc.args...)
			if err != nil {
				t.Fatalf("kubectl %v: %v", tc.args, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("kubectl %s output lacks %q:\n%s", strings.Join(tc.args, " "), w, out)
				}
			}
		})
	}
}

// TestWatchThroughAggregator watches PodGroups through kube-apiserver.
func TestWatchThroughAggregator(t *testing.T) {
	ctx := testContext(t, time.Minute)
	ns := namespace(t, ctx)
	w, err := muster.SchedulingV1alpha1().PodGroups(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	createGroup(t, ctx, ns, "watched", 2)
	select {
	case ev := <-w.ResultChan():
		pg, ok := ev.Object.(*v1alpha1.PodGroup)
		if ev.Type != watch.Added || !ok || pg.Name != "watched" {
			t.Fatalf("event %s %T, want ADDED of watched", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no watch event")
	}
}

// TestDelegatedAuthorization checks that the cluster's RBAC decides, through
// SubjectAccessReviews, who may do what, and that status is authorized apart.
func TestDelegatedAuthorization(t *testing.T) {
	ctx := testContext(t, 2*time.Minute)
	ns, other := namespace(t, ctx), namespace(t, ctx)
	createGroup(t, ctx, ns, "guarded", 2)
	createGroup(t, ctx, other, "elsewhere", 2)

	// alice may read and update PodGroups in ns, but not their status.
	if _, err := env.Kubectl(ctx, "create", "role", "podgroup-editor", "-n", ns,
		"--verb=get,list,watch,update,patch", "--resource=podgroups.scheduling.muster.dev"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Kubectl(ctx, "create", "rolebinding", "alice", "-n", ns, "--role=podgroup-editor", "--user=alice"); err != nil {
		t.Fatal(err)
	}
	as := func(user string) versioned.Interface {
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		return versioned.NewForConfigOrDie(cfg)
	}
	alice := as("alice").SchedulingV1alpha1()
	waitFor(t, ctx, "alice's Role to take effect", func(ctx context.Context) (bool, error) {
		_, err := alice.PodGroups(ns).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	if _, err := alice.PodGroups(other).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("alice listing another namespace: %v, want Forbidden", err)
	}
	pg, err := alice.PodGroups(ns).Get(ctx, "guarded", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("alice get: %v", err)
	}
	pg.Status.Pods = 1
	if _, err := alice.PodGroups(ns).UpdateStatus(ctx, pg, metav1.UpdateOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("alice writing status: %v, want Forbidden (podgroups/status is not granted)", err)
	}
	if _, err := alice.PodGroups(ns).Update(ctx, pg, metav1.UpdateOptions{}); err != nil {
		t.Errorf("alice updating the main resource: %v", err)
	}
	if _, err := as("mallory").SchedulingV1alpha1().PodGroups(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("a user with no binding: %v, want Forbidden", err)
	}

	// Anonymous requests are refused, through the aggregator and directly.
	for _, base := range []string{env.APIServerURL, env.MusterURL} {
		// Muster's own address is dialled trusting Muster's CA.
		trusted := env.Config
		if base == env.MusterURL {
			var err error
			if trusted, err = env.MusterConfig(base); err != nil {
				t.Fatal(err)
			}
		}
		anon := rest.AnonymousClientConfig(trusted)
		anon.Host = base
		client, err := rest.HTTPClientFor(anon)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/apis/scheduling.muster.dev/v1alpha1/namespaces/"+ns+"/podgroups", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("anonymous request to %s: %v", base, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
			t.Errorf("anonymous request to %s: HTTP %d, want 401 or 403", base, resp.StatusCode)
		}
	}
}

// TestManifestsDryRun checks that what users install stays valid for a real
// kube-apiserver: the chart's default rendering, dist/muster.yaml (kubectl
// apply --server-side -f), and the chart rendered with a 3-member etcd, with
// an external etcd and, where the cluster serves it, with the prepare
// policy. It uses a bare cluster of its own: the suite's cluster already
// runs Muster under the same names, wired for a local process.
func TestManifestsDryRun(t *testing.T) {
	ctx := testContext(t, 3*time.Minute)
	root, err := cluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := cluster.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	bare := cluster.StartForTest(t, cluster.Options{BinDir: bin, Nodes: 1})
	// A server-side dry run creates nothing, so the namespace every other
	// object lives in must exist for real.
	if _, err := bare.Kubectl(ctx, "create", "namespace", cluster.MusterNamespace); err != nil {
		t.Fatal(err)
	}
	kinds := []string{"apiservice.apiregistration.k8s.io/v1alpha1.scheduling.muster.dev", "deployment.apps/muster-apiserver",
		"mutatingwebhookconfiguration.admissionregistration.k8s.io/muster-pod-webhook", "validatingwebhookconfiguration.admissionregistration.k8s.io/muster-pod-webhook",
		"validatingadmissionpolicy.admissionregistration.k8s.io/muster-pod-labels",
		"validatingadmissionpolicy.admissionregistration.k8s.io/muster-pod-creates",
		"priorityclass.scheduling.k8s.io/muster-capacity-request",
		"networkpolicy.networking.k8s.io/muster-apiserver"}
	type rendering struct {
		name  string
		file  string   // a committed rendering, or
		flags []string // helm template's flags
		want  []string
	}
	renderings := []rendering{
		{name: "dist/muster.yaml", file: filepath.Join(root, "dist", "muster.yaml"),
			want: []string{"statefulset.apps/muster-etcd", "namespace/" + cluster.MusterNamespace}},
		{name: "3-member etcd", flags: []string{"--values", filepath.Join(root, "test/chart/testdata/ha-etcd.yaml")},
			want: []string{"statefulset.apps/muster-etcd", "poddisruptionbudget.policy/muster-etcd", "job.batch/muster-uninstall"}},
		{name: "external etcd", flags: []string{"--values", filepath.Join(root, "test/chart/testdata/external-etcd.yaml")}},
	}
	if servesMutatingPolicies(t, bare) {
		renderings = append(renderings, rendering{name: "prepare policy", flags: []string{"--set", "preparePolicy.enabled=true"},
			want: []string{"mutatingadmissionpolicy.admissionregistration.k8s.io/muster-pod-prepare"}})
	}
	for _, r := range renderings {
		file := r.file
		if file == "" {
			out, err := chart.Template(filepath.Join(bin, "helm"), filepath.Join(root, "charts", "muster"), cluster.MusterNamespace, nil, r.flags...)
			if err != nil {
				t.Fatalf("rendering %s: %v", r.name, err)
			}
			file = filepath.Join(t.TempDir(), "rendering.yaml")
			if err := os.WriteFile(file, out, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		out, err := bare.Kubectl(ctx, "apply", "--server-side", "--dry-run=server", "-f", file)
		if err != nil {
			t.Errorf("kubectl apply --server-side --dry-run=server, %s: %v", r.name, err)
			continue
		}
		for _, kind := range append(slices.Clone(kinds), r.want...) {
			if !strings.Contains(string(out), kind) {
				t.Errorf("dry run of %s did not include %s:\n%s", r.name, kind, out)
			}
		}
	}
}

// servesMutatingPolicies reports whether the cluster serves
// MutatingAdmissionPolicy (admissionregistration.k8s.io/v1, 1.36 and later).
func servesMutatingPolicies(t *testing.T, c *cluster.Cluster) bool {
	t.Helper()
	resources, err := c.Client.Discovery().ServerResourcesForGroupVersion("admissionregistration.k8s.io/v1")
	if err != nil {
		t.Fatalf("discovering admissionregistration.k8s.io/v1: %v", err)
	}
	for _, r := range resources.APIResources {
		if r.Name == "mutatingadmissionpolicies" {
			return true
		}
	}
	return false
}

// TestOpenAPIThroughAggregator checks that kube-apiserver merged Muster's
// OpenAPI v3 document, which kubectl explain and SSA rely on.
func TestOpenAPIThroughAggregator(t *testing.T) {
	ctx := testContext(t, time.Minute)
	raw, err := kube.Discovery().RESTClient().Get().AbsPath("/openapi/v3").DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET /openapi/v3: %v", err)
	}
	var index struct {
		Paths map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	if _, ok := index.Paths["apis/scheduling.muster.dev/v1alpha1"]; !ok {
		t.Errorf("kube-apiserver's /openapi/v3 lacks apis/scheduling.muster.dev/v1alpha1")
	}
}

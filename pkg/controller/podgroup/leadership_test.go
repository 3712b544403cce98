package podgroup

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	musterfake "github.com/muster-dev/muster/pkg/generated/clientset/versioned/fake"
)

// TestLeadershipTerms runs two controllers one after the other in one
// process, as muster-apiserver does when its replica loses the Lease and
// wins it back: each term's controller serves its metrics from the
// process's registry only while it runs. The second term starts without a
// duplicate registration, and its gauges are its own, not the sum of both
// terms; between the terms no gauge is served at all.
func TestLeadershipTerms(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, Labels: map[string]string{corev1.LabelMetadataName: testNS}}}
	terms := []struct {
		name  string
		pods  []*corev1.Pod
		gated float64
	}{
		{name: "first term", pods: []*corev1.Pod{newPod("p-0")}, gated: 1},
		{name: "second term, after the Lease was lost and won back", pods: []*corev1.Pod{newPod("p-0"), newPod("p-1"), newPod("p-2")}, gated: 3},
	}
	for _, term := range terms {
		// A gang of 4 that is not complete: its pods stay gated. The
		// API server gives a new group its Pending phase.
		pg := newGroup(4)
		pg.Status.Phase = v1alpha1.PodGroupPending
		stop := runTerm(t, append(objects(pg, term.pods...), ns))
		pollMetrics(t, term.name+": the gated-pods gauge to count this term's pods", func(_ map[string]bool, series map[string]float64) bool {
			return series[`muster_gated_pods{phase="Pending"}`] == term.gated
		})
		if families, _ := scrape(t); !families["muster_podgroups_waiting_for_capacity"] {
			t.Errorf("%s: muster_podgroups_waiting_for_capacity is not served while the controller leads", term.name)
		}
		stop()
		families, _ := scrape(t)
		for _, m := range newControllerMetrics().all() {
			if families[m.FQName()] {
				t.Errorf("%s: %s is still served after the controller stopped leading", term.name, m.FQName())
			}
		}
	}
}

// runTerm runs a controller over objs with count admission, as a leader's
// term does; stop ends the term and waits for Run to return.
func runTerm(t *testing.T, objs []runtime.Object) (stop func()) {
	t.Helper()
	var kubeObjs, musterObjs []runtime.Object
	for _, o := range withVersions(objs) {
		switch o.(type) {
		case *v1alpha1.PodGroup:
			musterObjs = append(musterObjs, o)
		default:
			kubeObjs = append(kubeObjs, o)
		}
	}
	kube := kubefake.NewSimpleClientset(kubeObjs...)
	muster := musterfake.NewSimpleClientset(musterObjs...)
	keepVersions(&kube.Fake, kube.Tracker())
	keepVersions(&muster.Fake, muster.Tracker())
	cfg := DefaultConfig()
	cfg.Admission = AdmissionCount
	_, stop = runController(t, cfg, kube, muster)
	return stop
}

// scrape reads what the process's registry serves, as muster-apiserver's
// /metrics does: each family's TYPE line, by name, and each series' value.
func scrape(t *testing.T) (families map[string]bool, series map[string]float64) {
	t.Helper()
	rec := httptest.NewRecorder()
	legacyregistry.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	families, series = map[string]bool{}, map[string]float64{}
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if name, ok := strings.CutPrefix(line, "# TYPE "); ok {
			families[strings.Fields(name)[0]] = true
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("parsing %q: %v", line, err)
		}
		series[line[:i]] = v
	}
	return families, series
}

// pollMetrics waits, with a deadline, until cond holds of what is served.
func pollMetrics(t *testing.T, what string, cond func(families map[string]bool, series map[string]float64) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return cond(scrape(t)), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

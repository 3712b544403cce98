package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/pkg/generated/clientset/versioned"
	"github.com/muster-dev/muster/test/cluster"
)

// upgradeAnnotation is the pod annotation the next chart version's values
// set, so that helm upgrade changes the Deployment's pod template and the
// replicas roll.
const upgradeAnnotation = "muster.dev/e2e-upgraded-to"

// TestHelmUpgradeUnderLoad installs the chart with two replicas (the
// chart's default), keeps a steady stream of gangs coming (a PodGroup of
// two and its two labelled pods, which run for a second and succeed), runs
// helm upgrade to the next chart version meanwhile, which rolls both
// replicas one after the other, and keeps the stream going after. Every
// create succeeds and every labelled pod is created gated, and every gang
// ends Succeeded with both its pods counted: no count is lost across the
// change of servers and of controller leader.
//
// There is no earlier chart release to upgrade from (charts/muster is the
// first), so the "next version" is this chart with its version bumped and
// a pod annotation changed through values.
func TestHelmUpgradeUnderLoad(t *testing.T) {
	c := clusterOfItsOwn(t, func(o *cluster.Options) {
		o.MusterReplicas = 2
		o.Nodes = 2
	})
	ctx := testContext(t, 8*time.Minute)
	kc := kubernetes.NewForConfigOrDie(c.Config)
	mc := versioned.NewForConfigOrDie(c.Config)
	next := nextChartVersion(t, "0.1.1")
	ns := c.NewNamespace(t, ctx, "helm-upgrade")

	load := &gangStream{kube: kc, muster: mc, ns: ns}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		load.run(loadCtx)
	}()
	defer func() {
		stopLoad()
		wg.Wait()
	}()
	waitFor(t, ctx, "10 gangs before the upgrade", func(context.Context) (bool, error) { return load.count() >= 10, nil })

	rolled, err := c.HelmUpgrade(ctx, next, map[string]any{"podAnnotations": map[string]any{upgradeAnnotation: "0.1.1"}})
	if err != nil {
		t.Fatalf("helm upgrade: %v", err)
	}
	if !rolled {
		t.Fatal("helm upgrade changed no pod template: the replicas did not roll")
	}
	after := load.count()
	waitFor(t, ctx, "10 more gangs after the upgrade", func(context.Context) (bool, error) { return load.count() >= after+10, nil })
	stopLoad()
	wg.Wait()

	d, err := kc.AppsV1().Deployments(cluster.MusterNamespace).Get(ctx, cluster.MusterDeployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.Template.Annotations[upgradeAnnotation]; got != "0.1.1" {
		t.Errorf("the Deployment's pod annotation %s = %q after the upgrade, want 0.1.1", upgradeAnnotation, got)
	}
	if got := d.Labels["helm.sh/chart"]; got != "muster-0.1.1" {
		t.Errorf("the Deployment's helm.sh/chart label = %q after the upgrade, want muster-0.1.1", got)
	}
	failures := load.failures()
	for _, f := range failures {
		t.Error(f)
	}
	created := load.created()
	t.Logf("%d gangs (%d pod creates) across the upgrade, %d failed requests", len(created), 2*len(created), len(failures))
	for _, name := range created {
		waitFor(t, ctx, "gang "+name+" to succeed with both pods counted", func(ctx context.Context) (bool, error) {
			pg, err := mc.SchedulingV1alpha1().PodGroups(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			if pg.Status.Phase == v1alpha1.PodGroupFailed {
				return false, fmt.Errorf("gang %s Failed: %+v", name, pg.Status)
			}
			return pg.Status.Phase == v1alpha1.PodGroupSucceeded && pg.Status.Succeeded == 2, nil
		})
	}
}

// gangStream creates gangs of two pods that run for a second, one after
// another, about three a second, and records every failed or ungated
// create.
type gangStream struct {
	kube   kubernetes.Interface
	muster versioned.Interface
	ns     string

	mu sync.Mutex
	n  int
	// groups are the gangs whose PodGroup was created: a gang whose create
	// failed is reported, and not waited for.
	groups []string
	failed []string
}

func (g *gangStream) run(ctx context.Context) {
	began := time.Now()
	for i := 0; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("g-%d", i)
		at := time.Since(began).Round(time.Millisecond)
		if _, err := g.muster.SchedulingV1alpha1().PodGroups(g.ns).Create(ctx, newGroupObject(g.ns, name, 2), metav1.CreateOptions{}); err != nil {
			if ctx.Err() != nil {
				return
			}
			g.fail(fmt.Sprintf("%s create PodGroup %s: %v", at, name, err))
			continue
		}
		g.mu.Lock()
		g.groups = append(g.groups, name)
		g.mu.Unlock()
		for j := range 2 {
			p, err := g.kube.CoreV1().Pods(g.ns).Create(ctx, newPod(g.ns, fmt.Sprintf("%s-%d", name, j), podOpts{group: name, runFor: "1s"}), metav1.CreateOptions{})
			switch {
			case err != nil && ctx.Err() != nil:
				return
			case err != nil:
				g.fail(fmt.Sprintf("%s create pod %s-%d: %v", at, name, j, err))
			case !hasGate(p):
				g.fail(fmt.Sprintf("%s create pod %s-%d: created without the gate", at, name, j))
			}
		}
		g.mu.Lock()
		g.n = i + 1
		g.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
}

func (g *gangStream) fail(s string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.failed = append(g.failed, s)
}

// created are the gangs whose PodGroup was created, in order.
func (g *gangStream) created() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.groups)
}

// count is how many gangs were created whole.
func (g *gangStream) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n
}

func (g *gangStream) failures() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.failed...)
}

// nextChartVersion copies charts/muster into a temporary directory with
// its Chart.yaml version set to version.
func nextChartVersion(t *testing.T, version string) string {
	t.Helper()
	src, err := cluster.ChartPath()
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "muster")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copying the chart: %v", err)
	}
	path := filepath.Join(dst, "Chart.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^version: .*$`)
	if !re.Match(data) {
		t.Fatal("Chart.yaml has no version line")
	}
	if err := os.WriteFile(path, re.ReplaceAll(data, []byte("version: "+version)), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

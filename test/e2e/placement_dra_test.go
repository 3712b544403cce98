package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// The test DRA driver: no kubelet plugin runs (kwok runs the pods without
// preparing devices), but kube-scheduler allocates devices from the
// ResourceSlices the test publishes, as it would for a real driver.
const (
	gpuDriver      = "gpu.example.com"
	gpuClass       = "gpu.example.com"
	gpusPerNode    = 8
	gpusPerPod     = 2
	draGangPods    = 8
	draTestTimeout = 2 * time.Minute
)

// TestPlacementDRADevices: 2 nodes of 8 devices each, and two gangs of 8
// pods whose pods each claim 2 devices through a ResourceClaimTemplate, so
// that each gang needs every device (with one device a pod, both gangs
// would fit in the 16 at once, and nothing would have to wait). They run
// one after the other, each whole, and no device is ever allocated to two
// claims at once.
func TestPlacementDRADevices(t *testing.T) {
	if _, err := kube.Discovery().ServerResourcesForGroupVersion(resourcev1.SchemeGroupVersion.String()); err != nil {
		t.Skipf("%s is not served (DRA is GA from 1.34): %v", resourcev1.SchemeGroupVersion, err)
	}
	ctx := testContext(t, draTestTimeout)
	ns := namespace(t, ctx)
	nodes := placementNodes(t, ctx, ns, "gpu", 2, "32", nil)
	createDeviceClass(t, ctx, ns)
	for _, n := range nodes {
		publishGPUs(t, ctx, ns, n)
	}
	tmpl := createGPUTemplate(t, ctx, ns, "gpus", gpusPerPod)

	w := watchPlacement(t, ctx, ns)
	withGPUs := func(p *corev1.Pod) { claimGPUs(tmpl)(&p.Spec) }
	createGroup(t, ctx, ns, "a", draGangPods)
	createGroup(t, ctx, ns, "b", draGangPods)
	a, b := gangPods(ns, "a", draGangPods, "1", "5s", withGPUs), gangPods(ns, "b", draGangPods, "1", "5s", withGPUs)
	var all []*corev1.Pod
	for i := range a {
		all = append(all, a[i], b[i])
	}
	createPods(t, ctx, all)

	ran, allocated := map[string]bool{}, map[string]bool{}
	var pods []corev1.Pod
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		if e := w.err(); e != "" {
			t.Fatalf("gangs did not run whole: %s", e)
		}
		pods = listPods(t, ctx, ns)
		holding := map[string]int{}
		for i := range pods {
			p := &pods[i]
			if p.Spec.NodeName != "" && !scheduling.IsTerminal(p) {
				holding[p.Labels[scheduling.PodGroupLabel]]++
			}
		}
		if holding["a"] > 0 && holding["b"] > 0 {
			t.Fatalf("both gangs hold nodes at once (%v): %s", holding, podStates(pods))
		}
		for g, n := range holding {
			if n == draGangPods {
				ran[g] = true
			}
		}
		for _, c := range expectDevicesOnce(t, ctx, ns) {
			allocated[c] = true
		}
		finished := 0
		for _, g := range []string{"a", "b"} {
			if pg, err := getGroup(ctx, ns, g); err == nil && meta.IsStatusConditionTrue(pg.Status.Conditions, v1alpha1.ConditionFinished) {
				finished++
			}
		}
		return finished == 2, nil
	})
	if err != nil {
		t.Fatalf("waiting for both gangs to finish: %v; %s; %s; pods %s", err, groupState(ns, "a"), groupState(ns, "b"), podStates(pods))
	}
	w.check(t)
	for _, g := range []string{"a", "b"} {
		pg, _ := getGroup(ctx, ns, g)
		if pg.Status.Succeeded != draGangPods || pg.Status.Phase != v1alpha1.PodGroupSucceeded {
			t.Errorf("gang %s ended %s with %d succeeded, want Succeeded with %d", g, pg.Status.Phase, pg.Status.Succeeded, draGangPods)
		}
		if !ran[g] {
			t.Errorf("gang %s was never seen with all %d pods bound and running at once", g, draGangPods)
		}
	}
	if len(allocated) < 2*draGangPods {
		t.Errorf("saw %d claims allocated, want one for each of the %d pods", len(allocated), 2*draGangPods)
	}
}

// createDeviceClass creates the DeviceClass of the test driver's devices,
// deleted at the end of the test.
func createDeviceClass(t *testing.T, ctx context.Context, ns string) {
	t.Helper()
	dc := &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: gpuClass},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", gpuDriver)},
		}}},
	}
	if _, err := kube.ResourceV1().DeviceClasses().Create(ctx, dc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating DeviceClass: %v", err)
	}
	afterNamespace(t, ns, func(ctx context.Context) {
		if err := kube.ResourceV1().DeviceClasses().Delete(ctx, gpuClass, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
			t.Errorf("deleting DeviceClass: %v", err)
		}
	})
}

// createGPUTemplate creates a ResourceClaimTemplate of count devices of
// the test driver.
func createGPUTemplate(t *testing.T, ctx context.Context, ns, name string, count int) *resourcev1.ResourceClaimTemplate {
	t.Helper()
	tmpl := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpus", Exactly: &resourcev1.ExactDeviceRequest{
				DeviceClassName: gpuClass, AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: int64(count),
			}}},
		}}},
	}
	created, err := kube.ResourceV1().ResourceClaimTemplates(ns).Create(ctx, tmpl, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ResourceClaimTemplate: %v", err)
	}
	return created
}

// claimGPUs gives a pod a claim from tmpl, which its container uses.
func claimGPUs(tmpl *resourcev1.ResourceClaimTemplate) func(*corev1.PodSpec) {
	return func(spec *corev1.PodSpec) {
		spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpus", ResourceClaimTemplateName: &tmpl.Name}}
		spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpus"}}
	}
}

// publishGPUs publishes, as the driver's kubelet plugin would, one
// ResourceSlice with gpusPerNode devices in a pool named after the node;
// it is deleted at the end of the test.
func publishGPUs(t *testing.T, ctx context.Context, ns, node string) {
	t.Helper()
	slice := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + gpuDriver},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   gpuDriver,
			Pool:     resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			NodeName: &node,
		},
	}
	for i := range gpusPerNode {
		slice.Spec.Devices = append(slice.Spec.Devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	if _, err := kube.ResourceV1().ResourceSlices().Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatalf("publishing ResourceSlice for %s: %v", node, err)
	}
	afterNamespace(t, ns, func(ctx context.Context) {
		if err := kube.ResourceV1().ResourceSlices().Delete(ctx, slice.Name, metav1.DeleteOptions{}); err != nil && !isNotFound(err) {
			t.Errorf("deleting ResourceSlice %s: %v", slice.Name, err)
		}
	})
}

// expectDevicesOnce fails the test if two of the namespace's claims are
// allocated the same device, and returns the claims that are allocated.
func expectDevicesOnce(t *testing.T, ctx context.Context, ns string) []string {
	t.Helper()
	claims, err := kube.ResourceV1().ResourceClaims(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var allocated []string
	owner := map[string]string{}
	for _, c := range claims.Items {
		if c.Status.Allocation == nil {
			continue
		}
		allocated = append(allocated, c.Name)
		for _, r := range c.Status.Allocation.Devices.Results {
			dev := r.Driver + "/" + r.Pool + "/" + r.Device
			if other, ok := owner[dev]; ok && other != c.Name {
				t.Fatalf("device %s is allocated to claims %s and %s at once", dev, other, c.Name)
			}
			owner[dev] = c.Name
		}
	}
	return allocated
}

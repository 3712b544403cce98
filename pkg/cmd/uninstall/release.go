package uninstall

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
	"k8s.io/klog/v2"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// stopServers deletes muster-apiserver's Deployment and waits until none of
// its pods is left, terminating ones included: a controller still running
// would put its finalizer back on the pods releasePods is about to release.
func stopServers(ctx context.Context, kube kubernetes.Interface, o Options) error {
	propagation := metav1.DeletePropagationBackground
	err := kube.AppsV1().Deployments(o.Namespace).Delete(ctx, o.Deployment, metav1.DeleteOptions{PropagationPolicy: &propagation})
	if err := ignoreNotFound(err); err != nil {
		return fmt.Errorf("deleting Deployment %s/%s: %w", o.Namespace, o.Deployment, err)
	}
	var left []string
	err = wait.PollUntilContextTimeout(ctx, o.PollInterval, o.StopTimeout, true, func(ctx context.Context) (bool, error) {
		l, err := kube.CoreV1().Pods(o.Namespace).List(ctx, metav1.ListOptions{LabelSelector: o.ServerSelector})
		if err != nil {
			klog.FromContext(ctx).Error(err, "Cannot list muster-apiserver's pods; retrying")
			return false, nil
		}
		left = left[:0]
		for _, p := range l.Items {
			left = append(left, p.Name)
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("muster-apiserver pods %v in %s still run after %s: %w", left, o.Namespace, o.StopTimeout, err)
	}
	return nil
}

// releasePatch removes exactly Muster's gate and finalizer, and leaves other
// tools' gates and finalizers where they are: a strategic merge patch that
// deletes one list element by its key, and one finalizer by its value.
var releasePatch = func() []byte {
	p := map[string]any{
		"metadata": map[string]any{"$deleteFromPrimitiveList/finalizers": []string{scheduling.TrackingFinalizer}},
		"spec":     map[string]any{"schedulingGates": []map[string]any{{"$patch": "delete", "name": scheduling.AdmissionGate}}},
	}
	data, err := json.Marshal(p)
	if err != nil {
		panic(err) // a constant map always marshals
	}
	return data
}()

// held reports whether Muster still holds pod: its gate or its finalizer.
func held(p *corev1.Pod) bool {
	return slices.Contains(p.Finalizers, scheduling.TrackingFinalizer) ||
		slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool { return g.Name == scheduling.AdmissionGate })
}

// releasePods patches every labelled pod Muster still holds, in every
// namespace, and returns how many it released. A pod deleted meanwhile is
// skipped.
func releasePods(ctx context.Context, kube kubernetes.Interface) (int, error) {
	var targets []types.NamespacedName
	err := eachPod(ctx, kube, scheduling.PodGroupLabel, func(p *corev1.Pod) {
		if held(p) {
			targets = append(targets, types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
		}
	})
	if err != nil {
		return 0, fmt.Errorf("listing labelled pods: %w", err)
	}
	released := 0
	for _, t := range targets {
		_, err := kube.CoreV1().Pods(t.Namespace).Patch(ctx, t.Name, types.StrategicMergePatchType, releasePatch, metav1.PatchOptions{})
		if err := ignoreNotFound(err); err != nil {
			return released, fmt.Errorf("releasing pod %s: %w", t, err)
		}
		if err == nil {
			released++
		}
	}
	return released, nil
}

// deleteCapacityRequests deletes every capacity-request pod, in every
// namespace, and returns how many.
func deleteCapacityRequests(ctx context.Context, kube kubernetes.Interface) (int, error) {
	var targets []types.NamespacedName
	err := eachPod(ctx, kube, scheduling.CapacityRequestLabel, func(p *corev1.Pod) {
		targets = append(targets, types.NamespacedName{Namespace: p.Namespace, Name: p.Name})
	})
	if err != nil {
		return 0, fmt.Errorf("listing capacity-request pods: %w", err)
	}
	for _, t := range targets {
		if err := ignoreNotFound(kube.CoreV1().Pods(t.Namespace).Delete(ctx, t.Name, metav1.DeleteOptions{})); err != nil {
			return 0, fmt.Errorf("deleting capacity-request pod %s: %w", t, err)
		}
	}
	return len(targets), nil
}

// eachPod calls fn on every pod, in every namespace, that carries label,
// listed a page at a time so that a large cluster is never read at once.
func eachPod(ctx context.Context, kube kubernetes.Interface, label string, fn func(*corev1.Pod)) error {
	p := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
	})
	return p.EachListItem(ctx, metav1.ListOptions{LabelSelector: label}, func(o runtime.Object) error {
		fn(o.(*corev1.Pod))
		return nil
	})
}

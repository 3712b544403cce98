package abuse

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/manifests"
	hostile "github.com/muster-dev/muster/test/abuse/attack"
	"github.com/muster-dev/muster/test/cluster"
)

// The defaults of muster-apiserver's bounds on groups made from pods
// (--created-podgroup-qps, --created-podgroup-burst), which the suite's
// Muster keeps.
const (
	createdGroupQPS   = 10
	createdGroupBurst = 100
)

// churnRate is how many pods a second groupChurn creates, each naming a
// new group: twice what --created-podgroup-qps lets become groups.
const churnRate = 2 * createdGroupQPS

// webhookHost is host:port of the webhook listener kube-apiserver calls.
func webhookHost() (string, error) {
	u, err := url.Parse(env.MusterWebhookURL)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("the webhook's address %q: %v", env.MusterWebhookURL, err)
	}
	return u.Host, nil
}

// stalledBodies (issue 34, path 1) is the confirmed attack on a webhook
// that takes anonymous callers: 22 connections from one pod, each
// declaring a 3 MiB review body and stalling before its last byte, held
// the whole 64 MiB body budget, so that every review from kube-apiserver
// got a 503. The suite's webhook takes anonymous callers, as the chart's
// default does where kube-apiserver presents no client certificate; every
// well-behaved create must still be accepted. It calls from a pod other
// than item 8's (hostile.SecondSource), whose connections, at their
// address's bound, would leave it none.
func stalledBodies(met *hostile.StallStats) func(ctx context.Context, m tenant) (string, func() string, error) {
	return func(ctx context.Context, m tenant) (string, func() string, error) {
		addr, err := webhookHost()
		if err != nil {
			return "", nil, err
		}
		stop := hostile.StalledBodies(ctx, hostile.SecondSource, addr, 22, 3<<20, nil)
		return "22 connections, each declaring a 3 MiB body and stalling before its last byte", func() string {
			*met = stop()
			return fmt.Sprintf("%d connections in all: %d refused (503), %d cut off, %d failed dials",
				met.Connections, met.Refused, met.Cut, met.DialErrors)
		}, nil
	}
}

// reachedTheWebhook checks that the stalled clients met the bound on
// their address's share of the body budget, so that the attack was tried
// and not lost in dialling.
func reachedTheWebhook(met *hostile.StallStats) func(ctx context.Context, m tenant) error {
	return func(context.Context, tenant) error {
		if met.Refused == 0 {
			return fmt.Errorf("no stalled body was refused for its address's share (%d connections, %d cut off, %d failed dials): the attack never held the share", met.Connections, met.Cut, met.DialErrors)
		}
		return nil
	}
}

// refusedEach creates pods, and wants every one refused with refusal in
// its message.
func refusedEach(ctx context.Context, m tenant, pods []*corev1.Pod, refusal string) (string, func() string, error) {
	var errs []error
	refused := 0
	var first error
	for _, p := range pods {
		err := create(ctx, m, p)
		switch {
		case err == nil:
			errs = append(errs, fmt.Errorf("pod %s was accepted, want it refused with %q", p.Name, refusal))
		case !strings.Contains(err.Error(), refusal):
			errs = append(errs, fmt.Errorf("pod %s: refused with %.300v, want %q", p.Name, err, refusal))
		default:
			refused++
			first = cmpFirst(first, err)
		}
	}
	if len(errs) > 0 {
		return "", nil, errors.Join(errs...)
	}
	return fmt.Sprintf("%d of %d refused; first %s", refused, len(pods), answer(first)), nil, nil
}

// fatNodeSelector (issue 34, path 2): 60 gated pods with a 1.1 MiB
// nodeSelector each grew muster-apiserver's memory by 284 MiB, when the
// nodeSelector was not measured.
func fatNodeSelector(ctx context.Context, m tenant) (string, func() string, error) {
	sel := map[string]string{}
	for i := 0; len(sel)*72 < 1100<<10; i++ {
		sel[fmt.Sprintf("example.com/selector-%06d", i)] = strings.Repeat("v", 40)
	}
	var pods []*corev1.Pod
	for i := range 5 {
		p := malloryPod(m.ns, fmt.Sprintf("fat-selector-%d", i), "fat-selector", map[string]string{scheduling.MinCountAnnotation: "5"})
		p.Spec.NodeSelector = sel
		pods = append(pods, p)
	}
	return refusedEach(ctx, m, pods, "spec.nodeSelector: Too long")
}

// longLists (issue 34, path 2): Muster's admission policies look through a
// labelled pod's gates and finalizers in kube-apiserver, where a CEL
// comprehension's time is quadratic in its list's length: before the
// policies bounded them, one pod of 100,000 finalizers cost kube-apiserver
// 14 s of CPU per write. Both are refused by count, at their bound. (At
// 60,000 items the cost that is left is kube-apiserver's own, its managed
// fields: about 1 s of CPU a pod, labelled or not.)
func longLists(ctx context.Context, m tenant) (string, func() string, error) {
	const n = 10_000
	var pods []*corev1.Pod
	for i := range 5 {
		p := malloryPod(m.ns, fmt.Sprintf("long-gates-%d", i), "long-gates", map[string]string{scheduling.MinCountAnnotation: "5"})
		for j := range n {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: fmt.Sprint("g", j)})
		}
		pods = append(pods, p)
	}
	said, _, err := refusedEach(ctx, m, pods, "spec.schedulingGates: Too many")
	if err != nil {
		return said, nil, err
	}
	finalizers := make([]string, n)
	for j := range finalizers {
		finalizers[j] = fmt.Sprint("e.io/f", j)
	}
	updated, _, err := updateEach(ctx, m, "long-finalizers", 5, func(p *corev1.Pod) {
		p.Finalizers = append(finalizers, p.Finalizers...)
	}, "metadata.finalizers: Too many")
	return said + "; " + updated, nil, err
}

// manyContainers (issue 34, path 2): the controller keeps each
// container's requests and ports of a labelled pod.
func manyContainers(ctx context.Context, m tenant) (string, func() string, error) {
	var pods []*corev1.Pod
	for i := range 5 {
		p := malloryPod(m.ns, fmt.Sprintf("containers-%d", i), "containers", map[string]string{scheduling.MinCountAnnotation: "5"})
		base := p.Spec.Containers[0]
		p.Spec.Containers = nil
		for j := range 500 {
			c := *base.DeepCopy()
			c.Name = fmt.Sprintf("c%d", j)
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
		pods = append(pods, p)
	}
	return refusedEach(ctx, m, pods, "spec.containers: Too many")
}

// fatUnmanagedPods (issue 34, path 2): pods without the group label are
// Muster's only in that the scheduler's filters read them where they run;
// the controller kept every label and term of each. 20 running pods, each
// with 20 KiB of labels (past the 16 KiB kept) and 40 KiB of required pod
// anti-affinity (past the 32 KiB a stand-in takes its place): the suite's
// memory bound holds. TestUnmanagedPodsKeepBoundedBytes measures the cost
// per pod at 1 MiB of labels, which here would load the machine's
// kube-apiserver, not Muster.
func fatUnmanagedPods(ctx context.Context, m tenant) (string, func() string, error) {
	labels := map[string]string{}
	for i := 0; len(labels)*70 < 20<<10; i++ {
		labels[fmt.Sprintf("example.com/label-%06d", i)] = strings.Repeat("l", 40)
	}
	values := make([]string, 4000)
	for i := range values {
		values[i] = fmt.Sprintf("v-%05d", i)
	}
	var pods []*corev1.Pod
	for i := range 20 {
		p := malloryPod(m.ns, fmt.Sprintf("unmanaged-%d", i), "", nil)
		p.Labels = labels
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: perNode("example.com/never", values)}}
		pods = append(pods, p)
	}
	accepted, refused, first := createAll(ctx, m, pods)
	if accepted != len(pods) {
		return "", nil, fmt.Errorf("%d of %d unlabelled pods created: %v", accepted, len(pods), first)
	}
	var running int
	if err := waitUntil(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		running = 0
		for _, p := range pods {
			got, err := m.client.CoreV1().Pods(m.ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err == nil && got.Spec.NodeName != "" {
				running++
			}
		}
		return running == len(pods), nil
	}); err != nil {
		return "", nil, fmt.Errorf("%d of %d unlabelled pods placed: %w", running, len(pods), err)
	}
	return tally(accepted, refused, first) + fmt.Sprintf("; %d placed, each with %d labels", running, len(labels)), nil, nil
}

// groupChurn (issue 34, path 4) creates pods that each name a new group,
// in mallory's namespace that has no quota on PodGroups, 20 a second,
// deleting each 3 s later, for as long as the timed gangs run: without
// Muster's bounds, each made a PodGroup, kept for --created-group-ttl, so
// the groups grew without end whatever the pod quota. The controller must
// create them no faster than its defaults allow.
func groupChurn(outcome *error) func(ctx context.Context, m tenant) (string, func() string, error) {
	return func(ctx context.Context, m tenant) (string, func() string, error) {
		return churnGroups(ctx, m, outcome)
	}
}

// churnGroups runs groupChurn; outcome holds, once stop is called, what it
// must not have caused.
func churnGroups(ctx context.Context, m tenant, outcome *error) (string, func() string, error) {
	w, err := muster.SchedulingV1alpha1().PodGroups(m.loose).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		return "", nil, err
	}
	var created atomic.Int64
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Added {
				created.Add(1)
			}
		}
	}()
	loose := tenant{ns: m.loose, client: m.client}
	ctx, cancel := context.WithCancel(ctx)
	var pods, refused atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	wg.Go(func() {
		tick := time.NewTicker(time.Second / churnRate)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			wg.Go(func() {
				name := fmt.Sprintf("churn-%d", i)
				p := malloryPod(loose.ns, name, name, map[string]string{scheduling.MinCountAnnotation: "2"})
				if err := create(ctx, loose, p); err != nil {
					refused.Add(1)
					return
				}
				pods.Add(1)
				select {
				case <-ctx.Done():
				case <-time.After(3 * time.Second):
				}
				_ = loose.client.CoreV1().Pods(loose.ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			})
		}
	})
	groupsBound := func(d time.Duration) int64 {
		return createdGroupBurst + int64(createdGroupQPS*d.Seconds()) + 1
	}
	stop := func() string {
		cancel()
		wg.Wait()
		// Groups whose creation was paced may still come: the bound holds
		// for them too, over the time they took.
		time.Sleep(2 * time.Second)
		took := time.Since(start)
		w.Stop()
		<-watched
		n, bound := created.Load(), groupsBound(took)
		switch {
		case n > bound:
			*outcome = fmt.Errorf("Muster created %d PodGroups from pods in %v: more than --created-podgroup-burst %d and --created-podgroup-qps %d allow (%d)",
				n, took.Round(time.Second), createdGroupBurst, createdGroupQPS, bound)
		case pods.Load() <= bound:
			*outcome = fmt.Errorf("only %d pods naming new groups were created in %v: the bound (%d) was never tried", pods.Load(), took.Round(time.Second), bound)
		}
		return fmt.Sprintf("%d pods created naming new groups (%d refused) over %v; Muster created %d PodGroups (bound %d)",
			pods.Load(), refused.Load(), took.Round(time.Second), n, bound)
	}
	return fmt.Sprintf("%d pods a second in %s, each naming a new group", churnRate, m.loose), stop, nil
}

// musterAccount is the user of Muster's ServiceAccount, which the chart
// makes in cluster.MusterNamespace.
func musterAccount() string {
	return "system:serviceaccount:" + cluster.MusterNamespace + ":" + cluster.MusterService
}

// stolenToken (issue 34, path 9) acts as Muster's ServiceAccount, as one
// who stole its token would, and tries what least privilege took away.
// Every write is a dry run: refused, it changes nothing, and accepted, it
// changes nothing either, and fails the suite.
func stolenToken(ctx context.Context, m tenant) (string, func() string, error) {
	as := env.ImpersonatingClient(musterAccount())
	dry := []string{metav1.DryRunAll}

	// A pod of mallory's that Muster neither manages nor marked.
	bystander := malloryPod(m.ns, "bystander", "", nil)
	delete(bystander.Labels, scheduling.PodGroupLabel)
	if err := create(ctx, m, bystander); err != nil {
		return "", nil, fmt.Errorf("creating the bystander pod: %w", err)
	}
	tries := []struct {
		name    string
		try     func() error
		refusal string
	}{
		{"run an image of its choosing with the node's filesystem", func() error {
			p := malloryPod(m.ns, "stolen", "", nil)
			delete(p.Labels, scheduling.PodGroupLabel)
			p.Spec.Containers[0].Image = "docker.io/library/busybox:1"
			p.Spec.Volumes = []corev1.Volume{{Name: "root", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			_, err := as.CoreV1().Pods(m.ns).Create(ctx, p, metav1.CreateOptions{DryRun: dry})
			return err
		}, manifests.CreatesPolicyName},
		{"delete a pod it never marked", func() error {
			return as.CoreV1().Pods(m.ns).Delete(ctx, bystander.Name, metav1.DeleteOptions{DryRun: dry})
		}, manifests.WritesPolicyName},
		{"make the validating webhook fail open", func() error {
			c, err := kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, manifests.ConfigurationName, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("reading it as the admin: %w", err)
			}
			for i := range c.Webhooks {
				c.Webhooks[i].FailurePolicy = ptr.To(admissionregistrationv1.Ignore)
			}
			_, err = as.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, c, metav1.UpdateOptions{DryRun: dry})
			return err
		}, manifests.ConfigWritesPolicyName},
		{"read Secrets", func() error {
			_, err := as.CoreV1().Secrets(m.ns).List(ctx, metav1.ListOptions{})
			return err
		}, "forbidden"},
	}
	var errs []error
	for _, tt := range tries {
		err := tt.try()
		switch {
		case err == nil:
			errs = append(errs, fmt.Errorf("%s: accepted, want it refused by %s", tt.name, tt.refusal))
		case !strings.Contains(err.Error(), tt.refusal):
			errs = append(errs, fmt.Errorf("%s: refused with %.300v, want it refused by %s", tt.name, err, tt.refusal))
		}
	}
	if len(errs) > 0 {
		return "", nil, errors.Join(errs...)
	}
	return fmt.Sprintf("as %s: all %d refused (a pod of its image and volumes, an unmarked pod's deletion, the webhook failing open, Secrets)", musterAccount(), len(tries)), nil, nil
}

// outcomeOf checks what an attack recorded in outcome.
func outcomeOf(outcome *error) func(ctx context.Context, m tenant) error {
	return func(context.Context, tenant) error { return *outcome }
}

package abuse

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	hostile "github.com/muster-dev/muster/test/abuse/attack"
	"github.com/muster-dev/muster/test/cluster"
)

// attack is one thing a pods-only tenant tries.
type attack struct {
	// item is the path of the tenant-isolation issue it tries, or "more".
	item string
	name string
	// launch starts it, as mallory, and says what the cluster answered. An
	// attack that goes on returns stop, called once the well-behaved
	// tenant's timed gangs are done, which says what it did meanwhile.
	launch func(ctx context.Context, m tenant) (said string, stop func() string, err error)
	// verify checks, once the timed gangs are done, what the attack must
	// not have caused; nil when the suite's common checks cover it.
	verify func(ctx context.Context, m tenant) error
	// last is launched once every other attack has been tried: it uses up
	// what the others need to be tried at all (the namespace's quota).
	last bool
}

// attacks are run together, all at once, while the well-behaved tenant's
// gangs are timed.
func attacks() []attack {
	// Where the attacks that go on record what they met, for their checks.
	var stalled hostile.StallStats
	var churn error
	return []attack{
		{item: "1", name: "a role of 2,000,000 workers created later", launch: hugeRole, verify: notAdmitted("huge-role")},
		{item: "2", name: "a 68-year reservation of 11 × 10 cpu", launch: longReservation, verify: notAdmitted("long-reservation")},
		{item: "2", name: "a reservation of 11 × 10 cpu, past the namespace's cpu quota", launch: reservationOverQuota, verify: notAdmittedFor("over-quota", scheduling.ReasonReservationOverQuota)},
		{item: "3", name: "a gang of 5,001 pods", launch: gangOf5001, verify: notAdmitted("five-thousand-one")},
		{item: "4", name: "30 gated pods with 20,000-value affinity terms", launch: hugeAffinity},
		{item: "5", name: "20 groups created from annotations, never admitted, pods deleted", launch: abandonedGroups, verify: groupsDeleted("abandoned-", 20)},
		{item: "7", name: "the tracking finalizer put back 3 times on a finished gang's pods", launch: finalizerPutBack, verify: countsStay("finished", 2, 0)},
		{item: "8", name: "800 slow anonymous TLS clients dribbling a review body into the webhook", launch: slowWebhookClients},
		{item: "9", name: "Muster's etcd restarted while labelled pods are created", launch: etcdRestart},
		{item: "34.1", name: "22 anonymous connections holding 3 MiB review bodies, stalled before their last byte", launch: stalledBodies(&stalled), verify: reachedTheWebhook(&stalled)},
		{item: "34.2", name: "gated pods with a 1.1 MiB nodeSelector", launch: fatNodeSelector},
		{item: "34.2", name: "gated pods of 500 containers", launch: manyContainers},
		{item: "34.2", name: "20 running unlabelled pods with 20 KiB of labels and 40 KiB of anti-affinity", launch: fatUnmanagedPods},
		{item: "34.2", name: "a gated pod's node affinity grown to 20,000 hosts by update (KEP-3838)", launch: affinityGrownByUpdate},
		{item: "34.2", name: "Muster's annotations grown by update with 4-byte characters", launch: wideAnnotationsByUpdate},
		{item: "34.2", name: "gated pods with 10,000 scheduling gates, and 10,000 finalizers added by update", launch: longLists},
		{item: "34.4", name: "pods naming a new group each, created and deleted, 20 a second, where no quota bounds groups", launch: groupChurn(&churn), verify: outcomeOf(&churn)},
		{item: "34.8", name: "pods of the capacity-request class, to be spared by preemption", launch: capacityRequestClassPods},
		{item: "34.9", name: "Muster's stolen token", launch: stolenToken},
		{item: "more", name: "a gang of system-cluster-critical priority, to preempt the other tenant's gangs", launch: criticalGang},
		{item: "more", name: "150 pods naming 150 groups, past the namespace's group quota", launch: groupFlood, last: true},
		{item: "more", name: "malformed annotations", launch: malformedAnnotations},
	}
}

// malloryPod is a small labelled pod of mallory's.
func malloryPod(ns, name, group string, ann map[string]string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ns,
			Labels:      map[string]string{scheduling.PodGroupLabel: group},
			Annotations: map[string]string{},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name: "main", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}},
			}},
			TerminationGracePeriodSeconds: new(int64(1)),
		},
	}
	for k, v := range ann {
		p.Annotations[k] = v
	}
	return p
}

// answer says what the cluster answered to one create.
func answer(err error) string {
	if err == nil {
		return "accepted"
	}
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200] + "..."
	}
	return "refused: " + msg
}

// createAll creates pods at once, at most 20 in flight, and counts what
// was refused; first holds the first refusal.
func createAll(ctx context.Context, m tenant, pods []*corev1.Pod) (accepted, refused int, first error) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 20)
	for _, p := range pods {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := create(ctx, m, p)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				refused++
				if first == nil {
					first = err
				}
				return
			}
			accepted++
		})
	}
	wg.Wait()
	return accepted, refused, first
}

// create creates a pod as m, again on a conflict: kube-apiserver's quota
// admission answers Conflict when concurrent creates race for the quota's
// usage, and a client retries it, as kubectl and the controllers do.
func create(ctx context.Context, m tenant, p *corev1.Pod) error {
	return retry.OnError(retry.DefaultBackoff, apierrors.IsConflict, func() error {
		_, err := m.client.CoreV1().Pods(m.ns).Create(ctx, p, metav1.CreateOptions{})
		return err
	})
}

// tally says what createAll met.
func tally(accepted, refused int, first error) string {
	said := fmt.Sprintf("%d accepted, %d refused", accepted, refused)
	if first != nil {
		said += "; first " + answer(first)
	}
	return said
}

// firstOfGangs are n pods named prefix-i, each the first of its own gang of
// 2, group prefix-i, whose second pod never comes.
func firstOfGangs(ns, prefix string, n int) []*corev1.Pod {
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		name := fmt.Sprintf("%s-%d", prefix, i)
		pods[i] = malloryPod(ns, name, name, map[string]string{scheduling.MinCountAnnotation: "2"})
	}
	return pods
}

// driverWith is a driver pod whose roles-template asks for workers of
// workerCPU, count of them, created later.
func driverWith(ns, group string, count int64, workerCPU string, timeoutSeconds int64) (*corev1.Pod, error) {
	role := map[string]any{
		"name":     "worker",
		"count":    count,
		"template": map[string]any{"requests": map[string]string{"cpu": workerCPU}},
	}
	if timeoutSeconds > 0 {
		role["reservationTimeoutSeconds"] = timeoutSeconds
	}
	tmpl, err := json.Marshal([]any{role})
	if err != nil {
		return nil, err
	}
	p := malloryPod(ns, group+"-driver", group, map[string]string{scheduling.RolesTemplateAnnotation: string(tmpl)})
	p.Labels[scheduling.RoleLabel] = "driver"
	return p, nil
}

func createDriver(ctx context.Context, m tenant, group string, count int64, cpu string, timeoutSeconds int64) (string, func() string, error) {
	p, err := driverWith(m.ns, group, count, cpu, timeoutSeconds)
	if err != nil {
		return "", nil, err
	}
	return answer(create(ctx, m, p)), nil, nil
}

func hugeRole(ctx context.Context, m tenant) (string, func() string, error) {
	return createDriver(ctx, m, "huge-role", 2_000_000, "1", 0)
}

func longReservation(ctx context.Context, m tenant) (string, func() string, error) {
	return createDriver(ctx, m, "long-reservation", 11, "10", 1<<31-1)
}

// reservationOverQuota asks for 110 cpu of reserved places, with a
// timeout of one hour, in a namespace whose quota allows 16 cpu of pods.
func reservationOverQuota(ctx context.Context, m tenant) (string, func() string, error) {
	return createDriver(ctx, m, "over-quota", 11, "10", 3600)
}

func gangOf5001(ctx context.Context, m tenant) (string, func() string, error) {
	err := create(ctx, m, malloryPod(m.ns, "five-thousand-one-0", "five-thousand-one",
		map[string]string{scheduling.MinCountAnnotation: "5001"}))
	return answer(err), nil, nil
}

// hugeAffinity creates a gang of 30 that can never fit (it requires a pod
// no one runs), each pod with a 20,000-value selector, so that every
// admission cycle that tries it meets the whole of each.
func hugeAffinity(ctx context.Context, m tenant) (string, func() string, error) {
	values := make([]string, 20_000)
	for i := range values {
		values[i] = fmt.Sprintf("value-%05d", i)
	}
	var pods []*corev1.Pod
	for i := range 30 {
		p := malloryPod(m.ns, fmt.Sprintf("affinity-%d", i), "affinity", map[string]string{scheduling.MinCountAnnotation: "30"})
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: perNode("app", values)}}
		pods = append(pods, p)
	}
	return tally(createAll(ctx, m, pods)), nil, nil
}

// abandonedGroups creates 20 pods, each the first of a gang of 2 whose
// second never comes, waits for Muster to create their groups, and deletes
// the pods: the groups are left never admitted and empty.
func abandonedGroups(ctx context.Context, m tenant) (string, func() string, error) {
	pods := firstOfGangs(m.ns, "abandoned", 20)
	accepted, _, first := createAll(ctx, m, pods)
	if accepted != len(pods) {
		return "", nil, fmt.Errorf("%d of %d pods created: %v", accepted, len(pods), first)
	}
	if err := waitUntil(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		return countGroups(ctx, m.ns, "abandoned-") == len(pods), nil
	}); err != nil {
		return "", nil, fmt.Errorf("Muster never created the 20 groups: %w", err)
	}
	for _, p := range pods {
		if err := m.client.CoreV1().Pods(m.ns).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return "", nil, err
		}
	}
	return "20 groups created, their pods deleted", nil, nil
}

func countGroups(ctx context.Context, ns, prefix string) int {
	list, err := muster.SchedulingV1alpha1().PodGroups(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return -1
	}
	n := 0
	for _, pg := range list.Items {
		if strings.HasPrefix(pg.Name, prefix) {
			n++
		}
	}
	return n
}

// finalizerPutBack runs a gang of 2 to success, then puts Muster's
// tracking finalizer back on its finished pods three times. The group is
// made by the cluster's admin, as a platform team makes a tenant's groups,
// so that no TTL deletes it and its counts stay to be checked.
func finalizerPutBack(ctx context.Context, m tenant) (string, func() string, error) {
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "finished", Namespace: m.ns},
		Spec: v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{
			Gang: &v1alpha1.GangSchedulingPolicy{MinCount: 2},
		}},
	}
	// The admin's create runs while another attack restarts Muster's etcd,
	// so it is retried as an admin would retry it; a refusal is final.
	var createErr error
	if err := waitUntil(ctx, time.Minute, func(ctx context.Context) (bool, error) {
		_, createErr = muster.SchedulingV1alpha1().PodGroups(m.ns).Create(ctx, pg, metav1.CreateOptions{})
		switch {
		case createErr == nil, apierrors.IsAlreadyExists(createErr):
			return true, nil
		case apierrors.IsBadRequest(createErr), apierrors.IsInvalid(createErr), apierrors.IsForbidden(createErr):
			return false, createErr
		}
		return false, nil
	}); err != nil {
		return "", nil, fmt.Errorf("the admin creating group finished: %w (last: %v)", err, createErr)
	}
	var pods []*corev1.Pod
	for i := range 2 {
		pods = append(pods, malloryPod(m.ns, fmt.Sprintf("finished-%d", i), "finished",
			map[string]string{cluster.RunForAnnotation: "1s"}))
	}
	if accepted, _, first := createAll(ctx, m, pods); accepted != 2 {
		return "", nil, fmt.Errorf("creating the gang: %v", first)
	}
	if err := waitUntil(ctx, 2*time.Minute, func(ctx context.Context) (bool, error) {
		pg, err := muster.SchedulingV1alpha1().PodGroups(m.ns).Get(ctx, "finished", metav1.GetOptions{})
		if err != nil || pg.Status.Succeeded != 2 {
			return false, nil
		}
		for _, p := range pods {
			got, err := m.client.CoreV1().Pods(m.ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil || scheduling.HasTrackingFinalizer(got) {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return "", nil, fmt.Errorf("the gang never finished with 2 succeeded and its finalizers removed: %w", err)
	}
	patch := []byte(fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, scheduling.TrackingFinalizer))
	accepted, refused := 0, 0
	var first error
	for range 3 {
		for _, p := range pods {
			_, err := m.client.CoreV1().Pods(m.ns).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			if err != nil {
				refused++
				first = cmpFirst(first, err)
				continue
			}
			accepted++
			// Give Muster the time to see it, as an attacker would, before
			// the next try.
			_ = waitUntil(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
				got, err := m.client.CoreV1().Pods(m.ns).Get(ctx, p.Name, metav1.GetOptions{})
				return err == nil && !scheduling.HasTrackingFinalizer(got), nil
			})
		}
	}
	said := fmt.Sprintf("%d re-adds accepted, %d refused", accepted, refused)
	if first != nil {
		said += "; first " + answer(first)
	}
	return said, nil, nil
}

func cmpFirst(first, err error) error {
	if first == nil {
		return err
	}
	return first
}

// slowWebhookClients opens 800 anonymous TLS connections to the address
// kube-apiserver calls the webhook at, each sending a review body a byte at
// a time, for as long as the timed gangs run: any pod in the cluster can
// reach Muster's Service and do this.
func slowWebhookClients(ctx context.Context, m tenant) (string, func() string, error) {
	u, err := url.Parse(env.MusterWebhookURL)
	if err != nil || u.Host == "" {
		return "", nil, fmt.Errorf("the webhook's address %q: %v", env.MusterWebhookURL, err)
	}
	start := time.Now()
	stop := hostile.SlowWebhookClientsFrom(ctx, hostile.Source, u.Host, 800, nil)
	said := fmt.Sprintf("800 connections opened in %v", time.Since(start).Round(time.Millisecond))
	return said, func() string {
		st := stop()
		return fmt.Sprintf("%d connections in all, %d cut off by the server, %d failed dials", st.Connections, st.Cut, st.DialErrors)
	}, nil
}

// etcdRestart kills Muster's etcd and starts it again while labelled pods
// are created every 200ms, from the kill until 2s after etcd is ready
// again. The webhook needs no storage: every create must be accepted.
func etcdRestart(ctx context.Context, m tenant) (string, func() string, error) {
	var created, refused atomic.Int32
	var firstErr atomic.Pointer[error]
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			p := malloryPod(m.ns, fmt.Sprintf("during-restart-%d", i), fmt.Sprintf("during-restart-%d", i%5),
				map[string]string{scheduling.MinCountAnnotation: "100"})
			if err := create(ctx, m, p); err != nil {
				refused.Add(1)
				firstErr.CompareAndSwap(nil, &err)
				continue
			}
			created.Add(1)
		}
	})
	times, err := env.Restart(ctx, cluster.MusterEtcdComponent)
	if err == nil {
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
		}
	}
	close(done)
	wg.Wait()
	if err != nil {
		return "", nil, fmt.Errorf("restarting Muster's etcd: %w", err)
	}
	said := fmt.Sprintf("etcd down %.1fs; %d labelled creates accepted, %d refused", times.Ready.Sub(times.Killed).Seconds(), created.Load(), refused.Load())
	if p := firstErr.Load(); p != nil {
		return said, nil, fmt.Errorf("%s; first: %w", said, *p)
	}
	return said, nil, nil
}

// groupFlood names a new group in each of 150 pods, more groups than the
// namespace's quota allows.
func groupFlood(ctx context.Context, m tenant) (string, func() string, error) {
	return tally(createAll(ctx, m, firstOfGangs(m.ns, "flood", 150))), nil, nil
}

// malformedAnnotations are refused at create, each naming its annotation.
func malformedAnnotations(ctx context.Context, m tenant) (string, func() string, error) {
	cases := []struct{ key, value string }{
		{scheduling.MinCountAnnotation, "-1"},
		{scheduling.MinCountAnnotation, "99999999999"},
		{scheduling.RolesTemplateAnnotation, `[{"name": "worker", "count": `},
		{scheduling.RolesTemplateAnnotation, bigTemplate(200_000)},
		{scheduling.RolesAnnotation, "x"},
	}
	var errs []error
	for i, c := range cases {
		p := malloryPod(m.ns, fmt.Sprintf("malformed-%d", i), fmt.Sprintf("malformed-%d", i), map[string]string{c.key: c.value})
		if c.key == scheduling.RolesTemplateAnnotation {
			p.Labels[scheduling.RoleLabel] = "driver"
		}
		err := create(ctx, m, p)
		switch {
		case err == nil:
			errs = append(errs, fmt.Errorf("%s=%.40q was accepted", c.key, c.value))
		case !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) && !apierrors.IsBadRequest(err):
			errs = append(errs, fmt.Errorf("%s=%.40q: refused for another reason: %w", c.key, c.value, err))
		case !strings.Contains(err.Error(), c.key):
			errs = append(errs, fmt.Errorf("%s=%.40q: the refusal does not name the annotation: %w", c.key, c.value, err))
		}
	}
	if len(errs) > 0 {
		return "", nil, errors.Join(errs...)
	}
	return fmt.Sprintf("all %d refused, each naming its annotation", len(cases)), nil, nil
}

// bigTemplate is a well-formed roles-template of about size bytes: one
// worker whose template selects nodes by a great many labels.
func bigTemplate(size int) string {
	sel := map[string]string{}
	for i := 0; len(sel)*40 < size; i++ {
		sel[fmt.Sprintf("example.com/label-%06d", i)] = "value-of-the-label"
	}
	b, _ := json.Marshal([]any{map[string]any{
		"name": "worker", "count": 1,
		"template": map[string]any{"requests": map[string]string{"cpu": "1"}, "nodeSelector": sel},
	}})
	return string(b)
}

// notAdmitted checks that the group, if the cluster accepted it at all, is
// not admitted and says why.
func notAdmitted(group string) func(ctx context.Context, m tenant) error {
	return func(ctx context.Context, m tenant) error {
		pg, err := muster.SchedulingV1alpha1().PodGroups(m.ns).Get(ctx, group, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, v1alpha1.ConditionAdmitted)
		switch {
		case c == nil:
			return fmt.Errorf("group %s has no Admitted condition: it should say why it is not admitted", group)
		case c.Status == metav1.ConditionTrue:
			return fmt.Errorf("group %s was admitted: %s", group, c.Message)
		case c.Message == "":
			return fmt.Errorf("group %s is not admitted (%s) and does not say why", group, c.Reason)
		}
		return nil
	}
}

// notAdmittedFor checks that the group exists, is not admitted, and says
// why with reason.
func notAdmittedFor(group, reason string) func(ctx context.Context, m tenant) error {
	return func(ctx context.Context, m tenant) error {
		if _, err := waitAdmittedReason(ctx, 30*time.Second, m.ns, group, metav1.ConditionFalse, reason); err != nil {
			return fmt.Errorf("group %s: want Admitted=False/%s: %w", group, reason, err)
		}
		return nil
	}
}

// groupsDeleted checks that the n groups named with prefix are deleted
// within the created-group TTL and a minute.
func groupsDeleted(prefix string, n int) func(ctx context.Context, m tenant) error {
	return func(ctx context.Context, m tenant) error {
		ttl, err := time.ParseDuration(createdGroupTTL)
		if err != nil {
			return err
		}
		if err := waitUntil(ctx, ttl+time.Minute, func(ctx context.Context) (bool, error) {
			return countGroups(ctx, m.ns, prefix) == 0, nil
		}); err != nil {
			return fmt.Errorf("%d of %d never-admitted groups %s* left %v after their pods were deleted", countGroups(ctx, m.ns, prefix), n, prefix, ttl+time.Minute)
		}
		return nil
	}
}

// countsStay checks the group's counts.
func countsStay(group string, succeeded, failed int32) func(ctx context.Context, m tenant) error {
	return func(ctx context.Context, m tenant) error {
		pg, err := muster.SchedulingV1alpha1().PodGroups(m.ns).Get(ctx, group, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			// Deleted by its TTL once finished: its counts can no longer
			// be forged.
			return nil
		}
		if err != nil {
			return err
		}
		if pg.Status.Succeeded != succeeded || pg.Status.Failed != failed {
			return fmt.Errorf("group %s counts succeeded %d, failed %d: want %d and %d", group, pg.Status.Succeeded, pg.Status.Failed, succeeded, failed)
		}
		return nil
	}
}

// criticalGang tries a gang of 3 pods of system-cluster-critical priority,
// which would preempt the well-behaved tenant's gangs (priority 0). The
// cluster's admin polices PriorityClasses per namespace with a quota scope
// (mallory's criticalQuota); every pod must be refused by it.
func criticalGang(ctx context.Context, m tenant) (string, func() string, error) {
	var pods []*corev1.Pod
	for i := range 3 {
		p := malloryPod(m.ns, fmt.Sprintf("critical-%d", i), "critical", map[string]string{scheduling.MinCountAnnotation: "3"})
		p.Spec.PriorityClassName = "system-cluster-critical"
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("4")
		pods = append(pods, p)
	}
	accepted, refused, first := createAll(ctx, m, pods)
	said := tally(accepted, refused, first)
	switch {
	case accepted > 0:
		return said, nil, fmt.Errorf("%d of 3 critical-priority pods accepted: the gang could preempt other tenants", accepted)
	case first == nil || !strings.Contains(first.Error(), criticalQuota):
		return said, nil, fmt.Errorf("refused, but not by quota %s: %v", criticalQuota, first)
	}
	return said, nil, nil
}

// updateEach creates n small labelled pods of a group that never
// completes, so that they stay gated, then makes change to each by update;
// every update must be refused, with refusal in its message.
func updateEach(ctx context.Context, m tenant, prefix string, n int, change func(*corev1.Pod), refusal string) (string, func() string, error) {
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, malloryPod(m.ns, fmt.Sprintf("%s-%d", prefix, i), prefix, map[string]string{scheduling.MinCountAnnotation: "100"}))
	}
	if accepted, _, first := createAll(ctx, m, pods); accepted != n {
		return "", nil, fmt.Errorf("%d of %d pods created: %v", accepted, n, first)
	}
	refused := 0
	for _, p := range pods {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := m.client.CoreV1().Pods(m.ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			change(cur)
			_, err = m.client.CoreV1().Pods(m.ns).Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err == nil {
			return "", nil, fmt.Errorf("pod %s: the update was accepted, want it refused with %q", p.Name, refusal)
		}
		if !strings.Contains(err.Error(), refusal) {
			return "", nil, fmt.Errorf("pod %s: refused with %v, want %q", p.Name, err, refusal)
		}
		refused++
	}
	return fmt.Sprintf("%d pods created, %d updates refused: %s", n, refused, refusal), nil, nil
}

// affinityGrownByUpdate (issue 34, path 2): a gated pod may narrow its node
// affinity (KEP-3838), so it is created small and grown by update.
func affinityGrownByUpdate(ctx context.Context, m tenant) (string, func() string, error) {
	values := make([]string, 20_000)
	for i := range values {
		values[i] = fmt.Sprint(i)
	}
	return updateEach(ctx, m, "regrow", 5, func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: values}}}},
		}}}
	}, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution: Too long")
}

// wideAnnotationsByUpdate (issue 34, path 2): CEL's size of a string counts
// code points, so a bound in characters lets 4-byte characters through at
// four times its size.
func wideAnnotationsByUpdate(ctx context.Context, m tenant) (string, func() string, error) {
	wide := strings.Repeat("\U0001F600", scheduling.MaxPodMusterAnnotationBytes/2)
	return updateEach(ctx, m, "widen", 5, func(p *corev1.Pod) {
		p.Annotations[scheduling.RolesTemplateAnnotation] = `[{"name":"worker","count":2,"template":{}}]` + wide
	}, "metadata.annotations: Too long: Muster's annotations are")
}

// capacityRequestClassPods (issue 34, path 8): Muster never preempts its
// own capacity-request pods, which it knows by their class, label and
// owner; a tenant's pods of that class would be spared too.
func capacityRequestClassPods(ctx context.Context, m tenant) (string, func() string, error) {
	var pods []*corev1.Pod
	for i := range 5 {
		p := malloryPod(m.ns, fmt.Sprintf("classed-%d", i), "classed", nil)
		delete(p.Labels, scheduling.PodGroupLabel)
		p.Labels[scheduling.CapacityRequestLabel] = "classed"
		p.Spec.PriorityClassName = scheduling.CapacityRequestPriorityClass
		pods = append(pods, p)
	}
	accepted, refused, first := createAll(ctx, m, pods)
	if accepted > 0 || first == nil || !strings.Contains(first.Error(), "spec.priorityClassName: Forbidden") {
		return "", nil, fmt.Errorf("%d accepted, %d refused (%v); want every one refused on spec.priorityClassName", accepted, refused, first)
	}
	return tally(accepted, refused, first), nil, nil
}

// perNode is one required pod (anti-)affinity term: pods whose label key
// has one of values, on the same node.
func perNode(key string, values []string) []corev1.PodAffinityTerm {
	return []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
			Key: key, Operator: metav1.LabelSelectorOpIn, Values: values,
		}}},
		TopologyKey: corev1.LabelHostname,
	}}
}

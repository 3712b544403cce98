package chaos

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
	"github.com/muster-dev/muster/test/cluster"
)

// apiAnswerLimit is how soon after a restart both APIs must answer again.
const apiAnswerLimit = 10 * time.Second

// restart is one R2 restart: which component, at how many pods created,
// when the APIs answered again, and whether kwok was restarted after it.
type restart struct {
	component string
	atPods    int64
	times     cluster.RestartTimes
	answered  time.Time
	kwok      bool
	err       error
}

// sinceStart is how long after the new process started both APIs answered.
func (r restart) sinceStart() time.Duration { return r.answered.Sub(r.times.Started) }

// downtime is how long after the kill both APIs answered.
func (r restart) downtime() time.Duration { return r.answered.Sub(r.times.Killed) }

// probe writes through both APIs: a ConfigMap through kube-apiserver into
// etcd, and a PodGroup through the aggregator and a Muster replica into
// Muster's etcd. Both answering means the API answers.
type probe struct {
	ns string
	n  int
}

const probeName = "chaos-probe"

// setUp creates the objects the probe writes to.
func (p *probe) setUp(ctx context.Context) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: probeName, Namespace: p.ns}}
	if _, err := clients.kube.CoreV1().ConfigMaps(p.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	pg := &v1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: probeName, Namespace: p.ns},
		Spec:       v1alpha1.PodGroupSpec{SchedulingPolicy: v1alpha1.PodGroupSchedulingPolicy{Basic: &v1alpha1.BasicSchedulingPolicy{}}},
	}
	if _, err := clients.muster.SchedulingV1alpha1().PodGroups(p.ns).Create(ctx, pg, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// write makes one write through each API, each bounded by a short timeout.
func (p *probe) write(ctx context.Context) error {
	p.n++
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{"chaos.muster.dev/probe":"%d"}}}`, p.n))
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := clients.probeKube.CoreV1().ConfigMaps(p.ns).Patch(ctx, probeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("kube-apiserver: %w", err)
	}
	if _, err := clients.probeMuster.SchedulingV1alpha1().PodGroups(p.ns).Patch(ctx, probeName, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("muster: %w", err)
	}
	return nil
}

// restartAndProbe restarts a component, then writes through both APIs
// every 100ms until a write goes through.
func (p *probe) restartAndProbe(ctx context.Context, component string, atPods int64) restart {
	r := restart{component: component, atPods: atPods}
	r.times, r.err = env.Restart(ctx, component)
	if r.err != nil {
		return r
	}
	for r.answered.IsZero() && ctx.Err() == nil {
		if err := p.write(ctx); err == nil {
			r.answered = time.Now()
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if r.answered.IsZero() {
		r.err = ctx.Err()
		return r
	}
	// The fake kubelets: kwok drops a pod's stage whose patch met the
	// outage, where a kubelet retries, so it lists the pods again as a
	// kubelet's resync would (KwokComponent).
	if component != cluster.MusterEtcdComponent {
		if _, err := env.Restart(ctx, cluster.KwokComponent); err != nil {
			r.err = fmt.Errorf("restarting kwok after %s: %w", component, err)
		}
		r.kwok = true
	}
	return r
}

// restartSchedule is R2: each component restarts once, when that share of
// the pods has been created.
var restartSchedule = []struct {
	component string
	share     float64
}{
	{cluster.KubeAPIServerComponent, 0.30},
	{cluster.EtcdComponent, 0.55},
	{cluster.MusterEtcdComponent, 0.80},
}

// runRestarts waits for each point of restartSchedule and restarts its
// component.
func (p *probe) runRestarts(ctx context.Context, l *load) []restart {
	var done []restart
	total := float64(l.pods())
	for _, s := range restartSchedule {
		for float64(l.created.Load()) < s.share*total {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
				return done
			}
		}
		done = append(done, p.restartAndProbe(ctx, s.component, l.created.Load()))
	}
	return done
}

package server

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/util/retry"
	utilptr "k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// TestLeaderTermsOneAtATime checks that a term won while the last one's
// controller is still stopping starts only once that controller returned,
// and that a term whose leadership ends while it waits never starts.
func TestLeaderTermsOneAtATime(t *testing.T) {
	terms := newLeaderTerms()
	firstCtx, loseFirst := context.WithCancel(t.Context())
	firstRunning, releaseFirst := make(chan struct{}), make(chan struct{})
	var firstReturned atomic.Bool
	go terms.run(firstCtx, func(context.Context) {
		close(firstRunning)
		<-releaseFirst // still stopping, after its context ended
		firstReturned.Store(true)
	})
	<-firstRunning
	loseFirst()

	// A term that ends while it waits never starts.
	abandoned, abandon := context.WithCancel(t.Context())
	abandon()
	terms.run(abandoned, func(context.Context) { t.Error("a term whose context ended while it waited started") })

	secondDone := make(chan struct{})
	go func() {
		defer close(secondDone)
		terms.run(t.Context(), func(context.Context) {
			if !firstReturned.Load() {
				t.Error("the second term started while the first term's controller was still running")
			}
		})
	}()
	close(releaseFirst)
	<-secondDone
	if !firstReturned.Load() {
		t.Error("the second term returned before the first")
	}
}

// TestLeadTwoTerms runs lead against a fake API server, has another
// candidate take the Lease over, and lets it expire: the replica leads a
// second time in the same process, and its second term starts only once
// the first one's controller has returned, although that controller is
// still stopping when the elector wins the Lease back.
func TestLeadTwoTerms(t *testing.T) {
	kube := kubefake.NewClientset()
	checkLeaseVersions(kube)
	o := NewControllerOptions()
	o.LeaderElectNamespace = "muster-system"
	o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 800*time.Millisecond, 500*time.Millisecond, 100*time.Millisecond
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	leases := kube.CoordinationV1().Leases(o.LeaderElectNamespace)
	poll := func(what string, cond func(*coordinationv1.Lease) bool) {
		t.Helper()
		err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			l, err := leases.Get(ctx, scheduling.ControllerName, metav1.GetOptions{})
			return err == nil && cond(l), nil
		})
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}

	var running, terms atomic.Int32
	secondTerm := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		o.lead(ctx, kube, func(ctx context.Context) {
			if running.Add(1) > 1 {
				t.Error("two terms' controllers run at once")
			}
			defer running.Add(-1)
			switch terms.Add(1) {
			case 1:
				<-ctx.Done()
				// Still stopping while the elector wins the Lease back and
				// renews it once: by then, it has long started the next
				// term's callback.
				poll("the Lease won back and renewed", func(l *coordinationv1.Lease) bool {
					return utilptr.Deref(l.Spec.HolderIdentity, "") != "thief" && utilptr.Deref(l.Spec.LeaseTransitions, 0) >= 2 &&
						l.Spec.RenewTime != nil && l.Spec.AcquireTime != nil && l.Spec.RenewTime.After(l.Spec.AcquireTime.Time)
				})
			case 2:
				close(secondTerm)
				<-ctx.Done()
			}
		})
	}()

	poll("the first term's Lease", func(l *coordinationv1.Lease) bool { return utilptr.Deref(l.Spec.HolderIdentity, "") != "" })
	// Another candidate takes the Lease over, for one second: a read and a
	// write, retried when the elector's renewal lands in between.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, scheduling.ControllerName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds = utilptr.To("thief"), utilptr.To[int32](1)
		l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
		l.Spec.LeaseTransitions = utilptr.To(utilptr.Deref(l.Spec.LeaseTransitions, 0) + 1)
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-secondTerm:
	case <-time.After(time.Minute):
		t.Fatal("the replica did not lead a second time")
	}
	cancel()
	<-done
}

// checkLeaseVersions makes the fake clientset keep Leases' resourceVersion
// the way the API server does: each write sets a new one, and an update
// that names another is refused with a Conflict. Without it, the fake takes
// the last write, and an elector's renewal read before another candidate's
// takeover and written after it erases the takeover, which a real API
// server never lets happen.
func checkLeaseVersions(kube *kubefake.Clientset) {
	var mu sync.Mutex
	var last int64
	gvr := coordinationv1.SchemeGroupVersion.WithResource("leases")
	write := func(a clienttesting.Action) (bool, runtime.Object, error) {
		l := a.(interface{ GetObject() runtime.Object }).GetObject().(*coordinationv1.Lease).DeepCopy()
		ns := a.GetNamespace()
		mu.Lock()
		defer mu.Unlock()
		if a.GetVerb() == "update" {
			cur, err := kube.Tracker().Get(gvr, ns, l.Name)
			if err != nil {
				return true, nil, err
			}
			if got := cur.(*coordinationv1.Lease).ResourceVersion; l.ResourceVersion != got {
				return true, nil, apierrors.NewConflict(gvr.GroupResource(), l.Name, errors.New("the object has been modified"))
			}
		}
		last++
		l.ResourceVersion = strconv.FormatInt(last, 10)
		if a.GetVerb() == "create" {
			return true, l, kube.Tracker().Create(gvr, l, ns)
		}
		return true, l, kube.Tracker().Update(gvr, l, ns)
	}
	kube.PrependReactor("create", "leases", write)
	kube.PrependReactor("update", "leases", write)
}

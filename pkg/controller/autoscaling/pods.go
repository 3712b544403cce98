package autoscaling

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// groupIndex indexes what a request created by its group's key.
const groupIndex = "capacity-request-group"

// podRequester asks for room with capacity-request pods: one per pod of the
// gang, which kube-scheduler tries and, where none fits, marks
// Unschedulable, which is what every autoscaler provisions for. It watches
// only the pods that carry CapacityRequestLabel, trimmed to what State
// reads.
type podRequester struct {
	kube        kubernetes.Interface
	concurrency int
	informer    cache.SharedIndexInformer
	factory     informers.SharedInformerFactory

	mu sync.Mutex
	// made are the pods this requester created, by group key, until it
	// deletes them: Withdraw deletes them too, though the informer may not
	// show them yet.
	made map[scheduling.GroupKey]map[string]*corev1.Pod
}

// NewPods returns the Requester of capacity-request pods; concurrency bounds
// its creates and deletes in flight.
func NewPods(kube kubernetes.Interface, concurrency int) Requester {
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = scheduling.CapacityRequestLabel }),
		informers.WithTransform(trimRequestPod))
	inf := factory.Core().V1().Pods().Informer()
	// Cannot fail before the informer starts.
	_ = inf.AddIndexers(cache.Indexers{groupIndex: func(obj interface{}) ([]string, error) {
		m, err := metaOf(obj)
		if err != nil {
			return nil, err
		}
		// Only what a PodGroup controls: a pod someone else labelled is
		// none of Muster's business, and is never deleted.
		if g := m.GetLabels()[scheduling.CapacityRequestLabel]; g != "" && ownerUID(m) != "" {
			return []string{scheduling.NewGroupKey(m.GetNamespace(), g).String()}, nil
		}
		return nil, nil
	}})
	return &podRequester{kube: kube, concurrency: max(concurrency, 1), informer: inf, factory: factory, made: map[scheduling.GroupKey]map[string]*corev1.Pod{}}
}

func (r *podRequester) Kind() string { return KindPods }

func (r *podRequester) Start(ctx context.Context, changed func(key scheduling.GroupKey)) func() bool {
	notify := func(obj interface{}) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		if m, err := metaOf(obj); err == nil {
			if g := m.GetLabels()[scheduling.CapacityRequestLabel]; g != "" {
				changed(scheduling.NewGroupKey(m.GetNamespace(), g))
			}
		}
	}
	reg, _ := r.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, obj interface{}) { notify(obj) },
		DeleteFunc: notify,
	})
	r.factory.Start(ctx.Done())
	go func() {
		<-ctx.Done()
		r.factory.Shutdown()
	}()
	return func() bool { return r.informer.HasSynced() && reg.HasSynced() }
}

// podName names the i-th capacity-request pod of a demand: the same name
// for the same demand, so that a create retried after a crash finds the pod
// it made (AlreadyExists) rather than making a second.
func podName(d Demand, i int) string {
	return fmt.Sprintf("%s-cr-%s-%d", d.Name, d.Hash, i)
}

// Check refuses only a demand of no pods: any pod shape can be created.
func (r *podRequester) Check(d Demand) error {
	if d.Pods() == 0 {
		return errors.New("it asks for no pods")
	}
	return nil
}

func (r *podRequester) Request(ctx context.Context, d Demand) error {
	have := map[string]bool{}
	var stale []*corev1.Pod
	for _, p := range r.pods(d.Key()) {
		switch {
		case p.Annotations[scheduling.CapacityRequestHashAnnotation] != d.Hash,
			ownerUID(p) != d.UID,
			scheduling.IsTerminal(p):
			// Made for other pods, an earlier group of the same name, or
			// ended (evicted by the kubelet): it asks for the wrong room.
			stale = append(stale, p)
		case p.DeletionTimestamp == nil:
			have[p.Name] = true
		}
	}
	var want []*corev1.Pod
	i := 0
	for _, set := range d.PodSets {
		for range set.Count {
			name := podName(d, i)
			i++
			if have[name] {
				continue
			}
			want = append(want, requestPod(d, set.Template, name))
		}
	}
	errs := r.deleteAll(ctx, d.Key(), stale)
	errs = append(errs, r.parallel(ctx, len(want), func(ctx context.Context, i int) error {
		made, err := r.kube.CoreV1().Pods(d.Namespace).Create(ctx, want[i], metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("creating capacity-request pod %s/%s: %w", d.Namespace, want[i].Name, err)
		}
		r.remember(d.Key(), made)
		return nil
	})...)
	return errors.Join(errs...)
}

// remember records a pod this requester made, until it is deleted.
func (r *podRequester) remember(key scheduling.GroupKey, p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.made[key]
	if m == nil {
		m = map[string]*corev1.Pod{}
		r.made[key] = m
	}
	m[p.Name] = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, UID: p.UID}}
}

// forgetMade drops a pod from made once it is deleted.
func (r *podRequester) forgetMade(key scheduling.GroupKey, p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.made[key]; m != nil {
		delete(m, p.Name)
		if len(m) == 0 {
			delete(r.made, key)
		}
	}
}

// requestPod is a capacity-request pod of template, owned by d's group.
func requestPod(d Demand, template corev1.PodTemplateSpec, name string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: *template.ObjectMeta.DeepCopy(), Spec: *template.Spec.DeepCopy()}
	p.Name = name
	p.Namespace = d.Namespace
	p.OwnerReferences = []metav1.OwnerReference{OwnerReference(d)}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[scheduling.CapacityRequestHashAnnotation] = d.Hash
	return p
}

func (r *podRequester) Withdraw(ctx context.Context, key scheduling.GroupKey) error {
	pods := r.pods(key)
	r.mu.Lock()
	for name, p := range r.made[key] {
		if !slices.ContainsFunc(pods, func(q *corev1.Pod) bool { return q.Name == name }) {
			pods = append(pods, p)
		}
	}
	r.mu.Unlock()
	return errors.Join(r.deleteAll(ctx, key, pods)...)
}

// deleteAll deletes pods of group key at once (a grace period of 0: a pause container
// has nothing to stop, and the room is free the moment the call returns),
// each with a UID precondition.
func (r *podRequester) deleteAll(ctx context.Context, key scheduling.GroupKey, pods []*corev1.Pod) []error {
	return r.parallel(ctx, len(pods), func(ctx context.Context, i int) error {
		p := pods[i]
		err := r.kube.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0),
			Preconditions:      &metav1.Preconditions{UID: &p.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting capacity-request pod %s/%s: %w", p.Namespace, p.Name, err)
		}
		r.forgetMade(key, p)
		return nil
	})
}

// parallel runs n calls, r.concurrency at a time, and returns their errors.
func (r *podRequester) parallel(ctx context.Context, n int, call func(context.Context, int) error) []error {
	var (
		mu   sync.Mutex
		errs []error
	)
	workqueue.ParallelizeUntil(ctx, r.concurrency, n, func(i int) {
		if err := call(ctx, i); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	return errs
}

func (r *podRequester) State(key scheduling.GroupKey) (State, bool) {
	pods := r.pods(key)
	if len(pods) == 0 {
		return State{}, false
	}
	st := State{Kind: KindPods, Name: "pods labelled " + scheduling.CapacityRequestLabel + "=" + key.Name}
	newest := time.Time{}
	for _, p := range pods {
		if scheduling.IsEnding(p) {
			continue
		}
		st.Requested++
		if p.Spec.NodeName != "" {
			st.Provisioned++
		}
		created := p.CreationTimestamp.Time
		if st.Since.IsZero() || created.Before(st.Since) {
			st.Since = created
		}
		// The newest pod says what the request is for now.
		if !created.Before(newest) {
			newest = created
			st.Hash = p.Annotations[scheduling.CapacityRequestHashAnnotation]
		}
	}
	if st.Requested == 0 {
		return State{}, false
	}
	return st, true
}

func (r *podRequester) Keys() []scheduling.GroupKey {
	return indexedKeys(r.informer.GetIndexer())
}

// pods are the capacity-request pods of group key, from the informer.
func (r *podRequester) pods(key scheduling.GroupKey) []*corev1.Pod {
	return indexedOf[*corev1.Pod](r.informer.GetIndexer(), key)
}

// trimRequestPod keeps of a capacity-request pod what Request and State
// read: its name, labels, hash, owner, times, node and phase.
func trimRequestPod(obj interface{}) (interface{}, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	var ann map[string]string
	if h, ok := p.Annotations[scheduling.CapacityRequestHashAnnotation]; ok {
		ann = map[string]string{scheduling.CapacityRequestHashAnnotation: h}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: p.Name, Namespace: p.Namespace, UID: p.UID, ResourceVersion: p.ResourceVersion,
			Labels:            map[string]string{scheduling.CapacityRequestLabel: p.Labels[scheduling.CapacityRequestLabel]},
			Annotations:       ann,
			OwnerReferences:   p.OwnerReferences,
			CreationTimestamp: p.CreationTimestamp,
			DeletionTimestamp: p.DeletionTimestamp,
		},
		Spec:   corev1.PodSpec{NodeName: p.Spec.NodeName},
		Status: corev1.PodStatus{Phase: p.Status.Phase},
	}, nil
}

// metaOf reads the object metadata of an informer's object.
func metaOf(obj interface{}) (metav1.Object, error) {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	return meta.Accessor(obj)
}

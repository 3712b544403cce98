package whatif

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/controller/instance"
)

var (
	podGVK    = corev1.SchemeGroupVersion.WithKind("Pod")
	listGVK   = corev1.SchemeGroupVersion.WithKind("List")
	jobGVK    = batchv1.SchemeGroupVersion.WithKind("Job")
	jobSetGVK = schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}

	// acceptedKinds name the kinds spec.object may be, for refusals.
	acceptedKinds = []string{kindName(jobGVK), kindName(jobSetGVK), kindName(podGVK), kindName(listGVK) + " of Pods"}
)

// decoder decodes the built-in kinds as kube-apiserver does: JSON keys
// matched exactly, unknown fields dropped, nothing defaulted (admit.go
// defaults the pods, as the API does each pod it creates).
var decoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	// Registering a built-in type's group in a fresh scheme cannot fail.
	utilruntime.Must(corev1.AddToScheme(scheme))
	utilruntime.Must(batchv1.AddToScheme(scheme))
	return serializer.NewCodecFactory(scheme).UniversalDeserializer()
}()

// made is one pod as its workload's controller would create it, before
// kube-apiserver admits it.
type made struct {
	pod *corev1.Pod
	// name is its entry in Gang.Names.
	name string
	// path is where the pod's metadata and spec are in the review: the
	// pod itself, or the pod template it is made from.
	path *field.Path
}

// workload is what spec.object would create: its pods, in order, and the
// objects above them (a Job, a JobSet and its Jobs) by kind and name, for
// instance.Walk to read as the controller reads the cluster's.
type workload struct {
	pods   []made
	owners owners
}

// decodeObject returns the pods that spec.object would make, in namespace.
// FromReview has taken an empty object to mean the group's roles.
func decodeObject(namespace string, obj *runtime.RawExtension, path *field.Path) (*workload, field.ErrorList) {
	raw := obj.Raw
	if len(raw) == 0 && obj.Object != nil {
		var err error
		if raw, err = json.Marshal(obj.Object); err != nil {
			return nil, field.ErrorList{field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("cannot be encoded as JSON: %v", err))}
		}
	}
	decoded, gvk, errs := decode(raw, path)
	if len(errs) > 0 {
		return nil, errs
	}
	switch o := decoded.(type) {
	case *batchv1.Job:
		return jobWorkload(namespace, o, path) // job.go
	case *unstructured.Unstructured:
		return jobSetWorkload(namespace, o, path) // jobset.go
	case *corev1.Pod:
		if errs := checkNamespace(namespace, o.Namespace, path); len(errs) > 0 {
			return nil, errs
		}
		m, errs := podAsGiven(o, 0, path)
		if len(errs) > 0 {
			return nil, errs
		}
		return &workload{pods: []made{m}}, nil
	case *corev1.List:
		return listWorkload(namespace, o, path)
	}
	return nil, field.ErrorList{field.NotSupported(path.Child("kind"), kindName(*gvk), acceptedKinds)}
}

// decode decodes raw as one of the kinds spec.object may be: a JobSet as
// unstructured (Muster has no JobSet types), any other kind typed. Kinds
// that are not accepted are returned for the caller to refuse.
func decode(raw []byte, path *field.Path) (runtime.Object, *schema.GroupVersionKind, field.ErrorList) {
	obj, gvk, err := decoder.Decode(raw, nil, nil)
	switch {
	case err == nil:
		return obj, gvk, nil
	case runtime.IsMissingKind(err) || runtime.IsMissingVersion(err):
		return nil, nil, field.ErrorList{field.Required(path.Child("kind"), "apiVersion and kind must say what the object is: "+joinKinds())}
	case gvk == nil || !runtime.IsNotRegisteredError(err):
		return nil, nil, field.ErrorList{field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("cannot be decoded: %v", err))}
	case *gvk != jobSetGVK:
		return nil, gvk, field.ErrorList{field.NotSupported(path.Child("kind"), kindName(*gvk), acceptedKinds)}
	}
	u := &unstructured.Unstructured{}
	if _, _, err := unstructured.UnstructuredJSONScheme.Decode(raw, nil, u); err != nil {
		return nil, nil, field.ErrorList{field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("cannot be decoded: %v", err))}
	}
	return u, gvk, nil
}

// listWorkload is a v1 List: its items, each a Pod, in order.
func listWorkload(namespace string, list *corev1.List, path *field.Path) (*workload, field.ErrorList) {
	itemsPath := path.Child("items")
	switch n := len(list.Items); {
	case n == 0:
		return nil, field.ErrorList{field.Required(itemsPath, "the List would create no pods: it must hold the Pods of a gang")}
	case n > MaxPods:
		return nil, field.ErrorList{tooManyPods(itemsPath, int64(n))}
	}
	w := &workload{}
	var errs field.ErrorList
	seen := map[string]int{}
	for i, item := range list.Items {
		itemPath := itemsPath.Index(i)
		raw := item.Raw
		if len(raw) == 0 && item.Object != nil {
			var err error
			if raw, err = json.Marshal(item.Object); err != nil {
				errs = append(errs, field.Invalid(itemPath, field.OmitValueType{}, fmt.Sprintf("cannot be encoded as JSON: %v", err)))
				continue
			}
		}
		obj, gvk, itemErrs := decode(raw, itemPath)
		if len(itemErrs) > 0 {
			errs = append(errs, itemErrs...)
			continue
		}
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			errs = append(errs, field.NotSupported(itemPath.Child("kind"), kindName(*gvk), []string{kindName(podGVK)}))
			continue
		}
		errs = append(errs, checkNamespace(namespace, pod.Namespace, itemPath)...)
		m, podErrs := podAsGiven(pod, i, itemPath)
		if len(podErrs) > 0 {
			errs = append(errs, podErrs...)
			continue
		}
		if j, dup := seen[pod.Name]; dup && pod.Name != "" {
			errs = append(errs, field.Invalid(itemPath.Child("metadata", "name"), pod.Name,
				fmt.Sprintf("items[%d] has the same name: the second create would fail, as the name is taken", j)))
			continue
		}
		seen[pod.Name] = i
		w.pods = append(w.pods, m)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return w, nil
}

// podAsGiven is a pod the review gives itself, index in its List (0 for a
// lone Pod): named as it is, or by its generateName and index.
func podAsGiven(pod *corev1.Pod, index int, path *field.Path) (made, field.ErrorList) {
	name := pod.Name
	if name == "" {
		if pod.GenerateName == "" {
			return made{}, field.ErrorList{field.Required(path.Child("metadata", "name"), "name or generateName is required")}
		}
		name = pod.GenerateName + strconv.Itoa(index)
	}
	return made{pod: pod.DeepCopy(), name: name, path: path}, nil
}

// checkNamespace refuses an object whose namespace is not the review's:
// the review is asked where the workload would be submitted.
func checkNamespace(namespace, objNamespace string, path *field.Path) field.ErrorList {
	if objNamespace == "" || objNamespace == namespace {
		return nil
	}
	return field.ErrorList{field.Invalid(path.Child("metadata", "namespace"), objNamespace,
		fmt.Sprintf("must be empty or %q, the review's namespace, where the workload would be submitted", namespace))}
}

// tooManyPods refuses a workload of n pods, past MaxPods.
func tooManyPods(path *field.Path, n int64) *field.Error {
	return &field.Error{Type: field.ErrorTypeTooMany, Field: path.String(), BadValue: n,
		Detail: fmt.Sprintf("the object would create %d pods; a review may make at most %d (MaxPods), the most pods admission places at once for one gang", n, MaxPods)}
}

// podBytes checks the JSON the pods of a workload come to, each of count
// pods from one template, against MaxPodBytes.
type podBytes struct {
	total int64
}

// add counts count copies of template, at path, and refuses the workload
// once the copies pass MaxPodBytes.
func (b *podBytes) add(template *corev1.PodTemplateSpec, count int64, path *field.Path) *field.Error {
	raw, err := json.Marshal(template)
	if err != nil {
		return field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("cannot be encoded as JSON: %v", err))
	}
	b.total += int64(len(raw)) * count
	if b.total <= MaxPodBytes {
		return nil
	}
	return &field.Error{Type: field.ErrorTypeTooLong, Field: path.String(), BadValue: field.OmitValueType{},
		Detail: fmt.Sprintf("the pods the review would make come to more than %d bytes of JSON (MaxPodBytes), %d copies of this %d-byte template among them; a review makes each pod",
			MaxPodBytes, count, len(raw))}
}

// owners are the objects above a workload's pods, by kind and name, as
// instance.Reader serves them to instance.Walk: a Job, or a JobSet and
// its Jobs, each with the made-up UID its pods' owner references name.
// An owner that is not there (the owners of a Pod the review gives, or of
// the object itself) is not found, and the walk ends there, as it does
// at an owner the controller cannot read.
type owners map[string]runtime.Object

var _ instance.Reader = owners(nil)

func (o owners) add(kind, name string, obj runtime.Object) { o[kind+"/"+name] = obj }

// Get returns the object ref names, as unstructured.
func (o owners) Get(_ context.Context, _ string, ref metav1.OwnerReference) (*unstructured.Unstructured, error) {
	obj, ok := o[ref.Kind+"/"+ref.Name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: ref.Kind}, ref.Name)
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting %s %s: %w", ref.Kind, ref.Name, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// kindName names a kind as users write it: "batch/v1 Job".
func kindName(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + " " + gvk.Kind
}

func joinKinds() string {
	return fmt.Sprintf("a %s, a %s, a %s or a %s", acceptedKinds[0], acceptedKinds[1], acceptedKinds[2], acceptedKinds[3])
}

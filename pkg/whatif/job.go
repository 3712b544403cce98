package whatif

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/storage/names"
)

// What the Job API and the Job controller put on a Job's pods that
// k8s.io/api does not name: the legacy twins of batchv1.JobNameLabel and
// batchv1.ControllerUidLabel, which the Job API adds to the pod template
// beside them (pkg/registry/batch/job, generateSelector), and the
// variable that carries an Indexed Job's completion index
// (pkg/controller/job, addCompletionIndexEnvVariable).
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
	completionIndexEnv       = "JOB_COMPLETION_INDEX"
)

// generatedSuffix stands for the five random characters kube-apiserver
// appends to a generateName: it never generates a 0, so the name cannot
// be a real object's.
const generatedSuffix = "00000"

// madeUpUID is the UID of the n-th object a review makes up (a Job, a
// JobSet), which its pods' labels and owner references name. A real UID
// is a random version-4 UUID, whose version digit is 4, so none is ever
// one of these.
func madeUpUID(n int) types.UID {
	return types.UID(fmt.Sprintf("00000000-0000-0000-0000-%012d", n))
}

// jobWorkload is a batch/v1 Job: the pods its controller creates at
// first.
func jobWorkload(namespace string, job *batchv1.Job, path *field.Path) (*workload, field.ErrorList) {
	if errs := checkNamespace(namespace, job.Namespace, path); len(errs) > 0 {
		return nil, errs
	}
	job = job.DeepCopy()
	name, errs := objectName(&job.ObjectMeta, path)
	if len(errs) > 0 {
		return nil, errs
	}
	job.Name, job.Namespace, job.UID = name, namespace, madeUpUID(0)
	job.TypeMeta = metav1.TypeMeta{APIVersion: jobGVK.GroupVersion().String(), Kind: jobGVK.Kind}
	specPath := path.Child("spec")
	n, errs := jobPodCount(&job.Spec, specPath)
	if len(errs) > 0 {
		return nil, errs
	}
	if n > MaxPods {
		return nil, field.ErrorList{tooManyPods(specPath.Child("parallelism"), n)}
	}
	var bytes podBytes
	if err := bytes.add(&job.Spec.Template, n, specPath.Child("template")); err != nil {
		return nil, field.ErrorList{err}
	}
	w := &workload{owners: owners{}}
	created := asCreatedJob(job)
	w.owners.add(jobGVK.Kind, created.Name, created)
	w.pods = jobPods(created, int(n), specPath.Child("template"))
	return w, nil
}

// objectName is the name of a Job or JobSet, which its pods' labels
// carry: its name, or a stand-in for a generated one (generatedSuffix).
// It must be a name the Job API accepts for a Job whose selector it
// generates: a DNS subdomain that is also a label value.
func objectName(meta *metav1.ObjectMeta, path *field.Path) (string, field.ErrorList) {
	namePath := path.Child("metadata", "name")
	name := meta.Name
	if name == "" {
		if meta.GenerateName == "" {
			return "", field.ErrorList{field.Required(namePath, "name or generateName is required")}
		}
		name = meta.GenerateName + generatedSuffix
		namePath = path.Child("metadata", "generateName")
	}
	return name, jobNameErrs(name, namePath)
}

// jobNameErrs checks a Job's name as the Job API does: its pods carry it
// as a label value.
func jobNameErrs(name string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		errs = append(errs, field.Invalid(path, name, msg))
	}
	for _, msg := range validation.IsValidLabelValue(name) {
		errs = append(errs, field.Invalid(path, name, msg+": a Job's pods carry its name as the value of the label "+batchv1.JobNameLabel))
	}
	return errs
}

// jobPodCount is how many pods the Job controller creates at first for a
// new Job of spec: its parallelism, but no more than its completions, with
// the Job API's defaults (both unset: one of each; parallelism unset: 1).
// Errors name the fields under specPath that the Job API would refuse, or
// that make no pod at all.
func jobPodCount(spec *batchv1.JobSpec, specPath *field.Path) (int64, field.ErrorList) {
	var errs field.ErrorList
	parallelism, completions := int64(1), int64(-1)
	if p := spec.Parallelism; p != nil {
		if parallelism = int64(*p); parallelism < 0 {
			errs = append(errs, field.Invalid(specPath.Child("parallelism"), parallelism, "must be greater than or equal to 0"))
		}
	}
	if c := spec.Completions; c != nil {
		if completions = int64(*c); completions < 0 {
			errs = append(errs, field.Invalid(specPath.Child("completions"), completions, "must be greater than or equal to 0"))
		}
	}
	if m := spec.CompletionMode; m != nil {
		switch *m {
		case batchv1.NonIndexedCompletion:
		case batchv1.IndexedCompletion:
			if spec.Completions == nil {
				errs = append(errs, field.Required(specPath.Child("completions"), "when completionMode is Indexed"))
			}
		default:
			errs = append(errs, field.NotSupported(specPath.Child("completionMode"), *m,
				[]batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
		}
	}
	if len(errs) > 0 {
		return 0, errs
	}
	n := parallelism
	if completions >= 0 {
		n = min(n, completions)
	}
	if n == 0 {
		at := specPath.Child("parallelism")
		if completions == 0 {
			at = specPath.Child("completions")
		}
		return 0, field.ErrorList{field.Invalid(at, 0, "the Job would create no pods")}
	}
	return n, nil
}

// asCreatedJob is job as the Job API stores it, for what its pods carry:
// unless its selector is manual, its pod template gets the labels the API
// selects its pods by, its name and its UID, where the template does not
// set them already.
func asCreatedJob(job *batchv1.Job) *batchv1.Job {
	if job.Spec.ManualSelector != nil && *job.Spec.ManualSelector {
		return job
	}
	if job.Spec.Template.Labels == nil {
		job.Spec.Template.Labels = map[string]string{}
	}
	for k, v := range map[string]string{
		legacyJobNameLabel:         job.Name,
		batchv1.JobNameLabel:       job.Name,
		legacyControllerUIDLabel:   string(job.UID),
		batchv1.ControllerUidLabel: string(job.UID),
	} {
		if _, set := job.Spec.Template.Labels[k]; !set {
			job.Spec.Template.Labels[k] = v
		}
	}
	return job
}

// jobPods are the first n pods the Job controller creates for job, as it
// creates them: from the pod template, with the controller's tracking
// finalizer, owned by the Job, named by its generateName; an Indexed
// Job's pods each carry their completion index (0 to n-1, the first
// pending ones) as an annotation, a label and their hostname, and the
// index variable in every container. path is where the template is.
func jobPods(job *batchv1.Job, n int, path *field.Path) []made {
	tpl := job.Spec.Template.DeepCopy()
	indexed := job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
	if indexed {
		for i := range tpl.Spec.InitContainers {
			addIndexEnv(&tpl.Spec.InitContainers[i])
		}
		for i := range tpl.Spec.Containers {
			addIndexEnv(&tpl.Spec.Containers[i])
		}
	}
	if !slices.Contains(tpl.Finalizers, batchv1.JobTrackingFinalizer) {
		tpl.Finalizers = append(tpl.Finalizers, batchv1.JobTrackingFinalizer)
	}
	owner := metav1.NewControllerRef(job, jobGVK)
	out := make([]made, n)
	for i := range n {
		pod := &corev1.Pod{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{
				GenerateName:    job.Name + "-",
				Namespace:       job.Namespace,
				Labels:          maps.Clone(tpl.Labels),
				Annotations:     maps.Clone(tpl.Annotations),
				Finalizers:      slices.Clone(tpl.Finalizers),
				OwnerReferences: []metav1.OwnerReference{*owner},
			},
			Spec: *tpl.Spec.DeepCopy(),
		}
		if indexed {
			index := strconv.Itoa(i)
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[batchv1.JobCompletionIndexAnnotation] = index
			pod.Labels[batchv1.JobCompletionIndexAnnotation] = index
			pod.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, i)
			pod.GenerateName = indexedGenerateName(job.Name, i)
		}
		out[i] = made{pod: pod, name: fmt.Sprintf("%s-%d", job.Name, i), path: path}
	}
	return out
}

// indexedGenerateName is the generateName of an Indexed Job's pod of
// index i: "<job>-<i>-", the Job's name cut so that the whole fits what
// a generated name may start with.
func indexedGenerateName(job string, i int) string {
	suffix := "-" + strconv.Itoa(i) + "-"
	if len(job)+len(suffix) > names.MaxGeneratedNameLength {
		job = job[:max(0, names.MaxGeneratedNameLength-len(suffix))]
	}
	return job + suffix
}

// addIndexEnv gives a container the completion index variable, read from
// the pod's index label, unless it sets the variable itself.
func addIndexEnv(c *corev1.Container) {
	for _, v := range c.Env {
		if v.Name == completionIndexEnv {
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{
		Name: completionIndexEnv,
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: fmt.Sprintf("metadata.labels['%s']", batchv1.JobCompletionIndexAnnotation),
		}},
	})
}

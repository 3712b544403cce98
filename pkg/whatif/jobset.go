package whatif

import (
	"fmt"
	"maps"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The labels, each also an annotation, that the JobSet controller
// (sigs.k8s.io/jobset, labelAndAnnotateObject) puts on each child Job and
// its pod template, of those that name and size an instance: the JobSet's
// name and restart attempt are what scheduling.InstanceLabels names a
// JobSet's group by, "<jobset>-<attempt>". The attempt of a new JobSet is
// 0. The rest (global indexes, the job key, groups, a coordinator,
// exclusive placement) are not modelled.
const (
	jobSetNameLabel            = "jobset.sigs.k8s.io/jobset-name"
	jobSetUIDLabel             = "jobset.sigs.k8s.io/jobset-uid"
	replicatedJobNameLabel     = "jobset.sigs.k8s.io/replicatedjob-name"
	replicatedJobReplicasLabel = "jobset.sigs.k8s.io/replicatedjob-replicas"
	jobIndexLabel              = "jobset.sigs.k8s.io/job-index"
	restartAttemptLabel        = "jobset.sigs.k8s.io/restart-attempt"
)

// replicatedJob is one entry of a JobSet's spec.replicatedJobs, as far as
// the JobSet controller's Jobs are made of it.
type replicatedJob struct {
	Name string `json:"name"`
	// Replicas is how many Jobs are made of Template; 1 when unset, the
	// JobSet API's default.
	Replicas *int32                  `json:"replicas,omitempty"`
	Template batchv1.JobTemplateSpec `json:"template"`
}

// jobSetWorkload is a jobset.x-k8s.io JobSet: for each replicated job,
// its replicas Jobs "<jobset>-<replicatedJob>-<index>", made as the JobSet
// controller makes them, and the pods each one's controller creates at
// first (job.go).
func jobSetWorkload(namespace string, js *unstructured.Unstructured, path *field.Path) (*workload, field.ErrorList) {
	if errs := checkNamespace(namespace, js.GetNamespace(), path); len(errs) > 0 {
		return nil, errs
	}
	js = js.DeepCopy()
	meta := metav1.ObjectMeta{Name: js.GetName(), GenerateName: js.GetGenerateName()}
	name, errs := objectName(&meta, path)
	if len(errs) > 0 {
		return nil, errs
	}
	js.SetName(name)
	js.SetNamespace(namespace)
	js.SetUID(madeUpUID(0))

	rjobs, errs := replicatedJobs(js, path.Child("spec", "replicatedJobs"))
	if len(errs) > 0 {
		return nil, errs
	}
	w := &workload{owners: owners{}}
	w.owners.add(jobSetGVK.Kind, name, js)
	owner := metav1.NewControllerRef(js, jobSetGVK)
	uids := 1
	for i, rj := range rjobs {
		tplPath := path.Child("spec", "replicatedJobs").Index(i).Child("template", "spec", "template")
		for j := range int(rj.replicas) {
			job := childJob(js, rj.replicatedJob, int(rj.replicas), j, owner)
			job.Namespace, job.UID = namespace, madeUpUID(uids)
			uids++
			created := asCreatedJob(job) // job.go
			w.owners.add(jobGVK.Kind, created.Name, created)
			w.pods = append(w.pods, jobPods(created, int(rj.pods), tplPath)...)
		}
	}
	return w, nil
}

// sizedReplicatedJob is a replicated job read and checked: its Jobs and
// the pods each of them creates at first.
type sizedReplicatedJob struct {
	replicatedJob
	replicas, pods int64
}

// replicatedJobs reads and checks spec.replicatedJobs, at path: each a
// replicated job whose Jobs the Job API would accept, named uniquely,
// making between 1 and MaxPods pods in all, within MaxPodBytes.
func replicatedJobs(js *unstructured.Unstructured, path *field.Path) ([]sizedReplicatedJob, field.ErrorList) {
	items, found, err := unstructured.NestedSlice(js.Object, "spec", "replicatedJobs")
	switch {
	case err != nil:
		return nil, field.ErrorList{field.Invalid(path, field.OmitValueType{}, fmt.Sprintf("must be a list of replicated jobs: %v", err))}
	case !found || len(items) == 0:
		return nil, field.ErrorList{field.Required(path, "the JobSet would create no pods: it must have a replicated job")}
	}
	var (
		out   []sizedReplicatedJob
		errs  field.ErrorList
		total int64
		bytes podBytes
		seen  = sets.New[string]()
	)
	for i, item := range items {
		itemPath := path.Index(i)
		m, ok := item.(map[string]any)
		if !ok {
			errs = append(errs, field.Invalid(itemPath, field.OmitValueType{}, "must be an object"))
			continue
		}
		var rj replicatedJob
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &rj); err != nil {
			errs = append(errs, field.Invalid(itemPath, field.OmitValueType{}, fmt.Sprintf("cannot be read as a replicated job: %v", err)))
			continue
		}
		namePath := itemPath.Child("name")
		switch msgs := validation.IsDNS1123Label(rj.Name); {
		case rj.Name == "":
			errs = append(errs, field.Required(namePath, "each replicated job is named"))
			continue
		case len(msgs) > 0:
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(namePath, rj.Name, msg))
			}
			continue
		case seen.Has(rj.Name):
			errs = append(errs, field.Duplicate(namePath, rj.Name))
			continue
		}
		seen.Insert(rj.Name)
		replicas := int64(1)
		if rj.Replicas != nil {
			if replicas = int64(*rj.Replicas); replicas < 0 {
				errs = append(errs, field.Invalid(itemPath.Child("replicas"), replicas, "must be greater than or equal to 0"))
				continue
			}
		}
		pods, podErrs := jobPodCount(&rj.Template.Spec, itemPath.Child("template", "spec")) // job.go
		if len(podErrs) > 0 {
			errs = append(errs, podErrs...)
			continue
		}
		if replicas > 0 {
			// Its last Job has the longest name.
			last := fmt.Sprintf("%s-%s-%d", js.GetName(), rj.Name, replicas-1)
			if nameErrs := jobNameErrs(last, namePath); len(nameErrs) > 0 {
				for _, e := range nameErrs {
					e.Detail = fmt.Sprintf("the JobSet names its Job %q: %s", last, e.Detail)
				}
				errs = append(errs, nameErrs...)
				continue
			}
		}
		if total += replicas * pods; total > MaxPods {
			return nil, append(errs, tooManyPods(path, total))
		}
		if err := bytes.add(&rj.Template.Spec.Template, replicas*pods, itemPath.Child("template", "spec", "template")); err != nil {
			return nil, append(errs, err)
		}
		out = append(out, sizedReplicatedJob{replicatedJob: rj, replicas: replicas, pods: pods})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if total == 0 {
		return nil, field.ErrorList{field.Invalid(path, field.OmitValueType{}, "the JobSet would create no pods: every replicated job has 0 replicas")}
	}
	return out, nil
}

// childJob is the Job of index j of rj, a replicated job of replicas Jobs,
// as the JobSet controller makes it (constructJob): the template's
// metadata and spec, the JobSet's labels and annotations on both the Job
// and its pod template, owned by the JobSet.
func childJob(js *unstructured.Unstructured, rj replicatedJob, replicas, j int, owner *metav1.OwnerReference) *batchv1.Job {
	job := &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: jobGVK.GroupVersion().String(), Kind: jobGVK.Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name:            fmt.Sprintf("%s-%s-%d", js.GetName(), rj.Name, j),
			Labels:          maps.Clone(rj.Template.Labels),
			Annotations:     maps.Clone(rj.Template.Annotations),
			OwnerReferences: []metav1.OwnerReference{*owner},
		},
		Spec: *rj.Template.Spec.DeepCopy(),
	}
	jobSetKeys := map[string]string{
		jobSetNameLabel:            js.GetName(),
		jobSetUIDLabel:             string(js.GetUID()),
		replicatedJobNameLabel:     rj.Name,
		replicatedJobReplicasLabel: strconv.Itoa(replicas),
		jobIndexLabel:              strconv.Itoa(j),
		restartAttemptLabel:        "0",
	}
	for _, meta := range []*metav1.ObjectMeta{&job.ObjectMeta, &job.Spec.Template.ObjectMeta} {
		if meta.Labels == nil {
			meta.Labels = map[string]string{}
		}
		if meta.Annotations == nil {
			meta.Annotations = map[string]string{}
		}
		maps.Copy(meta.Labels, jobSetKeys)
		maps.Copy(meta.Annotations, jobSetKeys)
	}
	return job
}

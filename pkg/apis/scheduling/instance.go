package scheduling

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// GroupByInstance, as the value of GroupByAnnotation, names a pod's group
// after the workload instance that made it, read from the labels that the
// frameworks of InstanceLabels put on their pods.
const GroupByInstance = "instance"

// MaxGroupByKeys is the most label keys GroupByAnnotation may list.
const MaxGroupByKeys = 4

// GroupByRule says what the value of GroupByAnnotation must be.
var GroupByRule = fmt.Sprintf("must be %q or a comma-separated list of 1 to %d label keys, whose values on the pod name its group", GroupByInstance, MaxGroupByKeys)

// InstanceLabelSet is how one framework marks the pods of one instance:
// the labels whose values, joined by "-", name the instance's group. It
// is not an API type.
//
// +k8s:deepcopy-gen=false
type InstanceLabelSet struct {
	// Kind is the workload kind the labels identify, for messages and docs.
	Kind string
	Keys []string
}

// InstanceLabels are the label sets that GroupByInstance tries, in this
// order; the first whose labels are all on the pod names its group. JobSet
// comes before Job, since a JobSet's pods carry their child Job's labels
// too, and its restart attempt is part of the name, so that each attempt
// (a failurePolicy restart recreates every child Job) is a gang of its
// own. Kubeflow Trainer runs a TrainJob as a JobSet of the same name. A
// LeaderWorkerSet's group is named as its leader pod is.
var InstanceLabels = []InstanceLabelSet{
	{Kind: "JobSet", Keys: []string{"jobset.sigs.k8s.io/jobset-name", "jobset.sigs.k8s.io/restart-attempt"}},
	{Kind: "LeaderWorkerSet", Keys: []string{"leaderworkerset.sigs.k8s.io/name", "leaderworkerset.sigs.k8s.io/group-index"}},
	{Kind: "RayCluster", Keys: []string{"ray.io/cluster"}},
	{Kind: "Job", Keys: []string{"batch.kubernetes.io/job-name"}},
}

// ParseGroupBy parses the value of GroupByAnnotation: the label keys it
// lists, or nil for GroupByInstance. It returns an error, stating the
// rule, when the value is neither.
func ParseGroupBy(v string) ([]string, error) {
	if v == GroupByInstance {
		return nil, nil
	}
	keys := strings.Split(v, ",")
	if len(keys) > MaxGroupByKeys {
		return nil, fmt.Errorf("lists %d label keys: %s", len(keys), GroupByRule)
	}
	for i, k := range keys {
		k = strings.TrimSpace(k)
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("%q is not a label key (%s): %s", k, strings.Join(errs, "; "), GroupByRule)
		}
		keys[i] = k
	}
	return keys, nil
}

// InstanceGroupName is the name of the group of a pod with labels, whose
// GroupByAnnotation is groupBy: the values of the labels it names, joined
// by "-". A name that is not a valid group name (a lowercase RFC 1123
// subdomain of at most 63 characters, so that it fits the group label) is
// made one: lowercased, with other characters replaced by "-", cut to 52
// characters and followed by "-" and 10 hexadecimal digits of the SHA-256
// of the joined values, so that distinct instances keep distinct names.
// The error says which labels are missing.
func InstanceGroupName(groupBy string, labels map[string]string) (string, error) {
	keys, err := ParseGroupBy(groupBy)
	if err != nil {
		return "", err
	}
	return GroupNameByKeys(keys, labels)
}

// GroupNameByKeys is InstanceGroupName for a value that ParseGroupBy has
// parsed into keys (nil for GroupByInstance).
func GroupNameByKeys(keys []string, labels map[string]string) (string, error) {
	if keys == nil {
		for _, set := range InstanceLabels {
			if values, ok := labelValues(labels, set.Keys); ok {
				return nameFromValues(values), nil
			}
		}
		var sets []string
		for _, set := range InstanceLabels {
			sets = append(sets, fmt.Sprintf("%s (%s)", set.Kind, strings.Join(set.Keys, ", ")))
		}
		return "", fmt.Errorf("%s=%s needs the labels of a workload instance, and the pod has none of: %s; list the labels that identify the instance instead",
			GroupByAnnotation, GroupByInstance, strings.Join(sets, "; "))
	}
	values, ok := labelValues(labels, keys)
	if !ok {
		var missing []string
		for _, k := range keys {
			if labels[k] == "" {
				missing = append(missing, k)
			}
		}
		return "", fmt.Errorf("%s lists the labels %s, which the pod does not carry with a value", GroupByAnnotation, strings.Join(missing, ", "))
	}
	return nameFromValues(values), nil
}

// labelValues returns the values of keys in labels, and false if any is
// missing or empty.
func labelValues(labels map[string]string, keys []string) ([]string, bool) {
	values := make([]string, len(keys))
	for i, k := range keys {
		values[i] = labels[k]
		if values[i] == "" {
			return nil, false
		}
	}
	return values, true
}

// instanceNameMax is the longest group name: a label value.
const instanceNameMax = validation.LabelValueMaxLength

// instanceHashLen is how many hexadecimal digits of a hash end a name that
// had to be changed.
const instanceHashLen = 10

func nameFromValues(values []string) string {
	joined := strings.Join(values, "-")
	if len(joined) <= instanceNameMax && len(validation.IsDNS1123Subdomain(joined)) == 0 {
		return joined
	}
	var b strings.Builder
	for _, r := range strings.ToLower(joined) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	base := b.String()
	if max := instanceNameMax - instanceHashLen - 1; len(base) > max {
		base = base[:max]
	}
	base = strings.Trim(base, "-")
	sum := sha256.Sum256([]byte(joined))
	hash := hex.EncodeToString(sum[:])[:instanceHashLen]
	if base == "" {
		return hash
	}
	return base + "-" + hash
}

package manifests

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// The topology annotations (scheduling.TopologyAnnotations) are checked in
// muster-pod-labels, on create and whenever one changes, as the webhook
// checks them (validation.ValidateTopologyAnnotations, by the rules of
// spec.schedulingConstraints): a pod that carries only them is never sent
// to the webhook. The rules and their messages are the webhook's, but for
// a key that is no label key: the webhook gives apimachinery's messages
// for label keys, this policy labelKeyRule; where the webhook lists every
// bad entry of the preferred levels, the policy names the first; and the
// policy shows at most maxShown characters of a value.

// qualifiedNameRegexp is a label key, as IsQualifiedName of
// k8s.io/apimachinery/pkg/util/validation accepts it: an optional DNS-1123
// subdomain and '/', and a name of 1 to 63 characters. The prefix's bound
// of 253 characters is celLabelKey's.
const qualifiedNameRegexp = `^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$`

// labelKeyRule is what the policy says of a level that is no label key.
const labelKeyRule = "must be a node label key: a name of 1 to 63 characters (alphanumeric, '-', '_' or '.', starting and ending with an alphanumeric character), " +
	"after an optional prefix, a lowercase DNS subdomain of at most 253 characters, and '/'"

// maxLabelKey is the longest label key: a prefix of 253 characters, '/'
// and a name of 63.
const maxLabelKey = 253 + 1 + 63

// celLabelKey holds when the CEL string k is a label key. Its length is
// tested first, so that no regular expression runs over a long string
// (kube-apiserver's cost of a match grows with the string's length).
func celLabelKey(k string) string {
	return fmt.Sprintf("(size(%[1]s) <= %[3]d && %[1]s.matches('%[2]s') && %[1]s.indexOf('/') <= 253)", k, qualifiedNameRegexp, maxLabelKey)
}

// maxShown is the most characters of a value a message shows, the
// longest label key: a message past 5,000 characters is replaced by
// kube-apiserver with the failed expression.
const maxShown = maxLabelKey

// celShown is the CEL string v as a message shows it: cut to maxShown
// characters and "...".
func celShown(v string) string {
	return fmt.Sprintf("(size(%[1]s) <= %[2]d ? %[1]s : %[1]s.substring(0, %[2]d) + '...')", v, maxShown)
}

// topologyVariables are the policy's variables about the topology
// annotations. The preferred levels are split only when there are at most
// MaxPreferredTopology of them (their commas counted by one replace), so
// that what runs over them is bounded whatever the annotation's length.
func topologyVariables() []admissionregistrationv1.Variable {
	annotations := "metadata.annotations"
	changed := ""
	for i, k := range scheduling.TopologyAnnotations {
		if i > 0 {
			changed += " || "
		}
		changed += celKeyOpt("object", annotations, k) + " != " + celKeyOpt("oldObject", annotations, k)
	}
	return []admissionregistrationv1.Variable{
		{Name: "topologyChanged", Expression: changed},
		{Name: "topoRequired", Expression: celKeyOpt("object", annotations, scheduling.TopologyRequiredAnnotation)},
		{Name: "topoPreferred", Expression: celKeyOpt("object", annotations, scheduling.TopologyPreferredAnnotation)},
		{Name: "sliceKey", Expression: celKeyOpt("object", annotations, scheduling.TopologySliceKeyAnnotation)},
		{Name: "sliceSize", Expression: celKeyOpt("object", annotations, scheduling.TopologySliceSizeAnnotation)},
		{Name: "preferredCount", Expression: "variables.topoPreferred.size() == 0 ? 0 : " +
			"size(variables.topoPreferred[0]) - size(variables.topoPreferred[0].replace(',', '')) + 1"},
		{Name: "preferredKeys", Expression: fmt.Sprintf("variables.preferredCount == 0 || variables.preferredCount > %d ? [] : "+
			"variables.topoPreferred[0].split(',').map(k, k.trim())", scheduling.MaxPreferredTopology)},
		{Name: "validPreferred", Expression: "variables.preferredKeys.filter(k, " + celLabelKey("k") + ")"},
	}
}

// topologyValidations are the policy's checks of the topology annotations,
// each passed when none of them changed.
func topologyValidations() []admissionregistrationv1.Validation {
	annotations := "metadata.annotations"
	field := func(key string) string { return fmt.Sprintf("%s[%s]", annotations, key) }
	required := func(key, detail string) string { return celString(field(key) + ": Required value: " + detail) }
	// keyMessage is the message about the level k, a CEL string, that is
	// not a label key: required when it is empty.
	keyMessage := func(key, k string) string {
		return fmt.Sprintf("%s == '' ? %s : %s", k, required(key, scheduling.TopologyKeyRequired), invalidMessage(annotations, key, celShown(k), labelKeyRule))
	}
	v := func(expr, message string) admissionregistrationv1.Validation {
		return admissionregistrationv1.Validation{Expression: "!variables.topologyChanged || " + expr, MessageExpression: message, Reason: ptr.To(metav1.StatusReasonInvalid)}
	}
	firstBad := "variables.preferredKeys.filter(k, !" + celLabelKey("k") + ")[0]"
	duplicated := "variables.validPreferred.filter(k, !variables.validPreferred.exists_one(j, j == k))"
	return []admissionregistrationv1.Validation{
		v("variables.topoRequired.size() == 0 || "+celLabelKey("variables.topoRequired[0]"),
			keyMessage(scheduling.TopologyRequiredAnnotation, "variables.topoRequired[0]")),
		v(fmt.Sprintf("variables.preferredCount <= %d", scheduling.MaxPreferredTopology),
			fmt.Sprintf("%s + string(variables.preferredCount) + %s", celString(field(scheduling.TopologyPreferredAnnotation)+": Too many: "),
				celString(fmt.Sprintf(": must have at most %d items", scheduling.MaxPreferredTopology)))),
		v("variables.preferredKeys.all(k, "+celLabelKey("k")+")",
			keyMessage(scheduling.TopologyPreferredAnnotation, firstBad)),
		v(duplicated+".size() == 0",
			fmt.Sprintf(`%s + %s + '"'`, celString(field(scheduling.TopologyPreferredAnnotation)+`: Duplicate value: "`), celShown(duplicated+"[0]"))),
		v("variables.topoRequired.size() == 0 || !(variables.topoRequired[0] in variables.validPreferred)",
			invalidMessage(annotations, scheduling.TopologyPreferredAnnotation, celShown("variables.topoRequired[0]"), scheduling.TopologyDiffersRule)),
		v("variables.sliceKey.size() == variables.sliceSize.size()",
			fmt.Sprintf("variables.sliceKey.size() == 0 ? %s : %s",
				required(scheduling.TopologySliceKeyAnnotation, "must be set when "+scheduling.TopologySliceSizeAnnotation+" is set"),
				required(scheduling.TopologySliceSizeAnnotation, "must be set when "+scheduling.TopologySliceKeyAnnotation+" is set"))),
		v("variables.sliceKey.size() == 0 || "+celLabelKey("variables.sliceKey[0]"),
			keyMessage(scheduling.TopologySliceKeyAnnotation, "variables.sliceKey[0]")),
		v("variables.sliceKey.size() == 0 || variables.topoRequired.size() == 0 || variables.sliceKey[0] != variables.topoRequired[0] || !"+celLabelKey("variables.sliceKey[0]"),
			invalidMessage(annotations, scheduling.TopologySliceKeyAnnotation, celShown("variables.sliceKey[0]"), scheduling.TopologyDiffersRule)),
		v(fmt.Sprintf("variables.sliceSize.size() == 0 || (variables.sliceSize[0].matches('%s') && int(variables.sliceSize[0]) >= 1 && int(variables.sliceSize[0]) <= %d)",
			minCountRegexp, scheduling.MaxPlacements),
			invalidMessage(annotations, scheduling.TopologySliceSizeAnnotation, celShown("variables.sliceSize[0]"), scheduling.TopologySliceSizeRule)),
	}
}

package manifests

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
	schedulingvalidation "github.com/muster-dev/muster/pkg/apis/scheduling/validation"
)

const (
	reqA   = scheduling.TopologyRequiredAnnotation
	prefA  = scheduling.TopologyPreferredAnnotation
	sKeyA  = scheduling.TopologySliceKeyAnnotation
	sSizeA = scheduling.TopologySliceSizeAnnotation
)

// TestTopologyAnnotationsAsTheWebhook runs muster-pod-labels on creates of
// labelled pods with topology annotations, and the webhook's check
// (validation.ValidateTopologyAnnotations) on the same: the policy refuses
// exactly what the webhook refuses, naming a field and an error type the
// webhook names too, and with the webhook's very message where the rule is
// Muster's own (all but the format of a label key).
func TestTopologyAnnotationsAsTheWebhook(t *testing.T) {
	tests := []struct {
		name string
		ann  map[string]string
		// sameMessage: the policy's one denial is the webhook's one error.
		sameMessage bool
	}{
		{name: "no annotations", ann: nil},
		{name: "a required level", ann: map[string]string{reqA: "topology.kubernetes.io/zone"}},
		{name: "every annotation", ann: map[string]string{reqA: "topology.kubernetes.io/zone", prefA: "kubernetes.io/hostname, example.com/rack", sKeyA: "example.com/rack", sSizeA: "4"}},
		{name: "4 preferred levels", ann: map[string]string{prefA: "a,b,c,d"}},
		{name: "a slice's size of MaxPlacements, with a plus and zeros", ann: map[string]string{sKeyA: "rack", sSizeA: "+05000"}},
		{name: "a key with the longest prefix and name", ann: map[string]string{reqA: strings.Repeat("p", 253) + "/" + strings.Repeat("n", 63)}},

		{name: "an empty required level", ann: map[string]string{reqA: ""}, sameMessage: true},
		{name: "a required level with a blank", ann: map[string]string{reqA: "a zone"}},
		{name: "a required level with two slashes", ann: map[string]string{reqA: "a/b/c"}},
		{name: "a required level with an empty prefix", ann: map[string]string{reqA: "/zone"}},
		{name: "a required level with an upper-case prefix", ann: map[string]string{reqA: "Example.com/zone"}},
		{name: "a required level with a name of 64", ann: map[string]string{reqA: strings.Repeat("n", 64)}},
		{name: "a required level with a prefix of 254", ann: map[string]string{reqA: strings.Repeat("p", 254) + "/n"}},
		{name: "a required level ending in a dot", ann: map[string]string{reqA: "zone."}},
		{name: "5 preferred levels", ann: map[string]string{prefA: "a,b,c,d,e"}, sameMessage: true},
		{name: "10,000 preferred levels", ann: map[string]string{prefA: strings.Repeat("a,", 9_999) + "a"}, sameMessage: true},
		{name: "an empty preferred level", ann: map[string]string{prefA: "a,,b"}, sameMessage: true},
		{name: "an empty preferred annotation", ann: map[string]string{prefA: ""}, sameMessage: true},
		{name: "a preferred level that is no key", ann: map[string]string{prefA: "a,b!"}},
		{name: "a preferred level twice", ann: map[string]string{prefA: "a, b ,b"}, sameMessage: true},
		{name: "the required level preferred", ann: map[string]string{reqA: "zone", prefA: "rack,zone"}, sameMessage: true},
		{name: "a slice's key without its size", ann: map[string]string{sKeyA: "rack"}, sameMessage: true},
		{name: "a slice's size without its key", ann: map[string]string{sSizeA: "2"}, sameMessage: true},
		{name: "a slice's key that is no key", ann: map[string]string{sKeyA: "rack!", sSizeA: "2"}},
		{name: "a slice's key that is the required level", ann: map[string]string{reqA: "zone", sKeyA: "zone", sSizeA: "2"}, sameMessage: true},
		{name: "a slice's size of 0", ann: map[string]string{sKeyA: "rack", sSizeA: "0"}, sameMessage: true},
		{name: "a slice's size past MaxPlacements", ann: map[string]string{sKeyA: "rack", sSizeA: "5001"}, sameMessage: true},
		{name: "a negative slice size", ann: map[string]string{sKeyA: "rack", sSizeA: "-1"}, sameMessage: true},
		{name: "a slice's size past int32", ann: map[string]string{sKeyA: "rack", sSizeA: "2147483648"}, sameMessage: true},
		{name: "a slice's size that is no number", ann: map[string]string{sKeyA: "rack", sSizeA: "four"}, sameMessage: true},
		{name: "a slice's size with a blank", ann: map[string]string{sKeyA: "rack", sSizeA: " 4"}, sameMessage: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := labelledPod()
			pod.Annotations = tt.ann
			_, denied := evalPolicy(t, LabelsPolicy(), policyRequest{op: admission.Create, object: pod, user: &user.DefaultInfo{Name: "tenant"}})
			errs := schedulingvalidation.ValidateTopologyAnnotations(tt.ann, field.NewPath("metadata", "annotations"))
			var goKinds, goMessages []string
			for _, e := range errs {
				goKinds = append(goKinds, e.Field+": "+e.Type.String())
				goMessages = append(goMessages, e.Error())
			}
			if (len(denied) > 0) != (len(errs) > 0) {
				t.Fatalf("the policy denies %q, the webhook %q", denied, goMessages)
			}
			for _, d := range denied {
				if kind := deniedKind(d); !slices.Contains(goKinds, kind) {
					t.Errorf("the policy denies on %q, which the webhook does not name (%q)", kind, goKinds)
				}
			}
			if tt.sameMessage && (len(denied) != 1 || len(goMessages) != 1 || denied[0] != goMessages[0]) {
				t.Errorf("the policy says\n  %q\nthe webhook\n  %q", denied, goMessages)
			}
		})
	}
}

// deniedKind is the field and the error type a denial names:
// "metadata.annotations[k]: Invalid value".
var deniedKindRegexp = regexp.MustCompile(`^(metadata\.annotations\[[^\]]*\]: (Invalid value|Required value|Too many|Duplicate value))`)

func deniedKind(d string) string {
	if m := deniedKindRegexp.FindStringSubmatch(d); m != nil {
		return m[1]
	}
	return d
}

// TestTopologyChecksOnlyChanges: an update is checked only when a topology
// annotation changes, so that a pod stored before the rules stays
// updatable.
func TestTopologyChecksOnlyChanges(t *testing.T) {
	withAnn := func(ann map[string]string) *corev1.Pod {
		p := labelledPod()
		p.Annotations = ann
		return p
	}
	bad := map[string]string{reqA: "a zone"}
	tests := []struct {
		name     string
		old, pod *corev1.Pod
		want     string
	}{
		{name: "an unchanged invalid annotation does not block the update", old: withAnn(bad), pod: withAnn(map[string]string{reqA: "a zone", "example.com/x": "y"})},
		{name: "a changed annotation is checked", old: withAnn(map[string]string{reqA: "zone"}), pod: withAnn(bad),
			want: "metadata.annotations[" + reqA + "]: Invalid value"},
		{name: "removing half of a slice is checked", old: withAnn(map[string]string{sKeyA: "rack", sSizeA: "2"}), pod: withAnn(map[string]string{sKeyA: "rack"}),
			want: "metadata.annotations[" + sSizeA + "]: Required value"},
		{name: "adding a preferred level the required one is checked", old: withAnn(map[string]string{reqA: "zone"}), pod: withAnn(map[string]string{reqA: "zone", prefA: "zone"}),
			want: "metadata.annotations[" + prefA + "]: Invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, denied := evalPolicy(t, LabelsPolicy(), policyRequest{op: admission.Update, object: tt.pod, oldObject: tt.old, user: &user.DefaultInfo{Name: "tenant"}})
			switch {
			case tt.want == "" && len(denied) > 0:
				t.Errorf("denied: %v", denied)
			case tt.want != "" && (len(denied) != 1 || !strings.HasPrefix(denied[0], tt.want)):
				t.Errorf("denied with %q, want one denial starting %q", denied, tt.want)
			}
		})
	}
}

// TestQualifiedNameRegexp: the policy's label keys are apimachinery's.
func TestQualifiedNameRegexp(t *testing.T) {
	re := regexp.MustCompile(qualifiedNameRegexp)
	for _, k := range []string{
		"a", "A", "0", "zone", "topology.kubernetes.io/zone", "kubernetes.io/hostname", "Example/zone", "example.com/Zone_1.a-b",
		"", "/", "a/", "/a", "a/b/c", "-a", "a-", "_a", "a_", ".a", "a.", "a b", "é", "example.com./a", "ex..com/a", "EXAMPLE.com/a", "a@b",
		strings.Repeat("n", 63), strings.Repeat("n", 64),
		strings.Repeat("p", 253) + "/n", strings.Repeat("p", 254) + "/n",
		strings.Repeat("p", 63) + "." + strings.Repeat("q", 63) + "/n", strings.Repeat("p", 64) + ".q/n",
	} {
		// celLabelKey's bound on the prefix, in Go.
		got := re.MatchString(k) && strings.Index(k, "/") <= 253
		if want := len(validation.IsQualifiedName(k)) == 0; got != want {
			t.Errorf("%q: the policy says %v, IsQualifiedName %v", k, got, want)
		}
	}
}

// TestTopologyLongValues: topology annotations as long as kube-apiserver
// lets a pod carry (256 KiB of annotations in all) are refused within
// the policy's cost budget (evalPolicy fails on an evaluation error), each
// by a message that names its annotation rather than kube-apiserver's
// "failed expression", which replaces a message past 5,000 characters.
func TestTopologyLongValues(t *testing.T) {
	for _, four := range []bool{false, true} {
		pod := longTopology(labelledPod(), 60_000, four)
		_, denied := evalPolicy(t, LabelsPolicy(), policyRequest{op: admission.Create, object: pod, user: &user.DefaultInfo{Name: "tenant"}})
		if len(denied) == 0 {
			t.Errorf("four=%v: allowed", four)
		}
		for _, d := range denied {
			if !strings.HasPrefix(d, "metadata.annotations[scheduling.muster.dev/topology-") || len(d) > 5000 {
				t.Errorf("four=%v: denied with %.200q (%d characters)", four, d, len(d))
			}
		}
	}
}

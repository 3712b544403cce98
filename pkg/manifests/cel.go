package manifests

import (
	"fmt"
	"strings"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// Helpers that spell CEL expressions over the admitted pod, so that the
// policies say each rule once and a field that may be absent is never read
// without its has() guard (reading an absent field is a CEL error, and an
// error is a denial under failurePolicy Fail).

// celOpt is the value at path on root (object or oldObject) as a list of
// zero or one element: [] when it, or any field on the way, is absent. Two of
// them compare equal exactly when the field is unchanged, absence included.
// path is dotted from the root, such as "spec.affinity.podAffinity"; its
// first element must always be present (metadata, spec) unless it is the
// whole path.
func celOpt(root, path string) string {
	parts := strings.Split(path, ".")
	if len(parts) == 1 {
		return fmt.Sprintf("(has(%[1]s.%[2]s) ? [%[1]s.%[2]s] : [])", root, path)
	}
	var guards []string
	for i := 1; i < len(parts); i++ {
		guards = append(guards, fmt.Sprintf("has(%s.%s)", root, strings.Join(parts[:i+1], ".")))
	}
	return fmt.Sprintf("(%s ? [%s.%s] : [])", strings.Join(guards, " && "), root, path)
}

// celUnchanged holds when the field at path is the same on the old and the
// new pod, absence included.
func celUnchanged(path string) string {
	return celOpt("object", path) + " == " + celOpt("oldObject", path)
}

// celKeyOpt is the value of key in the map at path on root as a list of zero
// or one element. oldObject is null on a create: there it is [].
func celKeyOpt(root, path, key string) string {
	guard := ""
	if root == "oldObject" {
		guard = "oldObject != null && "
	}
	return fmt.Sprintf("(%[4]shas(%[1]s.%[2]s) && %[3]s in %[1]s.%[2]s ? [%[1]s.%[2]s[%[3]s]] : [])", root, path, celString(key), guard)
}

// celList is the list at path on root, or [] when it is absent.
func celList(root, path string) string {
	return fmt.Sprintf("(has(%[1]s.%[2]s) ? %[1]s.%[2]s : [])", root, path)
}

// celString quotes s as a single-quoted CEL string literal.
func celString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// Muster's CEL runs in kube-apiserver on requests a tenant writes, so an
// expression must not cost more than a constant number of steps on a list
// the tenant chose the length of. kube-apiserver tracks the cost of every
// expression, and cel-go's cost tracker makes a comprehension (all,
// exists, filter, map) quadratic in time in its list's length: 100,000
// finalizers made one exists() take 14 s of kube-apiserver's CPU, within
// the cost budget (`make bench`, BenchmarkPolicyOnLongLists). So a lookup
// is `in`, one call in Go; a comprehension runs only over a list whose
// length is bounded, by a literal, a size() test before it, or a bound the
// policies hold the pod to (TestPoliciesRunInBoundedSteps).

// celListHas holds when the list of strings at path on root holds item (a
// CEL literal), by one lookup.
func celListHas(root, path, item string) string {
	return fmt.Sprintf("(has(%[1]s.%[2]s) && %[3]s in %[1]s.%[2]s)", root, path, item)
}

// celHasGate holds when root's scheduling gates hold the gate named name. A
// gate is an object, found only by comprehension, which runs on at most
// scheduling.MaxPodSchedulingGates gates: a pod with more counts as not
// having it (and muster-pod-labels refuses such a labelled pod).
func celHasGate(root, name string) string {
	gates := celList(root, "spec.schedulingGates")
	return fmt.Sprintf("(size(%[1]s) <= %[3]d && %[1]s.exists(g, g.name == %[2]s))", gates, celString(name), scheduling.MaxPodSchedulingGates)
}

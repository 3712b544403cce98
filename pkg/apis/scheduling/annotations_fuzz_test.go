package scheduling

import (
	"strconv"
	"testing"
)

// FuzzAnnotationParsers feeds arbitrary values to the annotation parsers.
// They must never panic, must accept exactly what strconv reads as a
// positive 32-bit integer (ParseRoles: at most MaxRoles), and what they
// accept must be the number strconv reads.
// Run it with: make fuzz, or go test ./pkg/apis/scheduling -run '^$' -fuzz FuzzAnnotationParsers
func FuzzAnnotationParsers(f *testing.F) {
	for _, s := range []string{"8", "08", "+8", "0", "-1", "2147483647", "2147483648", " 8", "8 ", "", "1e3", "0x10", "9", "٣"} {
		f.Add(s, s, true)
		f.Add(s, "", false)
	}
	f.Fuzz(func(t *testing.T, v, other string, both bool) {
		want, err := strconv.ParseInt(v, 10, 32)
		valid := err == nil && want >= 1
		n, ok := ParseMinCount(v)
		if ok != valid || (ok && int64(n) != want) {
			t.Fatalf("ParseMinCount(%q) = %d, %v; strconv reads %d, %v", v, n, ok, want, err)
		}
		n, ok = ParseRoles(v)
		if ok != (valid && want <= MaxRoles) || (ok && int64(n) != want) {
			t.Fatalf("ParseRoles(%q) = %d, %v", v, n, ok)
		}
		ann := map[string]string{RoleCountAnnotation: v, WorkloadAnnotation: v}
		if both {
			ann[TemplateAnnotation] = other
		}
		if n, ok := RoleCount(ann); ok != valid || (ok && int64(n) != want) {
			t.Fatalf("RoleCount(%q) = %d, %v", v, n, ok)
		}
		w, tmpl, set, missing := WorkloadRefAnnotations(ann)
		switch {
		case both && (!set || missing != "" || w != v || tmpl != other):
			t.Fatalf("WorkloadRefAnnotations with both = %q, %q, %v, %q", w, tmpl, set, missing)
		case !both && (set || missing != TemplateAnnotation):
			t.Fatalf("WorkloadRefAnnotations without the template = %q, %q, %v, %q", w, tmpl, set, missing)
		}
	})
}

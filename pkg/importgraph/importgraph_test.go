package importgraph

import "testing"

// TestReachFollowsTheModulesImports: from a package that imports others of
// the module, Reach finds them and says who imports each, and leaves
// other modules' packages out.
func TestReachFollowsTheModulesImports(t *testing.T) {
	got, err := Reach("../..", Module+"pkg/controller/admission")
	if err != nil {
		t.Fatal(err)
	}
	if by, ok := got[Module+"pkg/apis/scheduling/v1alpha1"]; !ok || by == "" {
		t.Errorf("pkg/apis/scheduling/v1alpha1 not reached, or by no one (%q): %v", by, got)
	}
	for p := range got {
		if !Under(p, "pkg") {
			t.Errorf("reached %s, outside the module's pkg/", p)
		}
	}
}

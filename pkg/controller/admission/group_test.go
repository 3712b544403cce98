package admission

import (
	"maps"
	"testing"

	"github.com/muster-dev/muster/pkg/apis/scheduling/v1alpha1"
)

// TestLaterMissing: the places capacity admission reserves are the
// missing pods of createdLater roles that have a template, and only those.
func TestLaterMissing(t *testing.T) {
	tmpl := &v1alpha1.PodGroupRoleTemplate{}
	tests := []struct {
		name   string
		roles  []v1alpha1.PodGroupRole
		active map[string]int32
		want   map[string]int32
	}{
		{"a role created later counts its missing pods", []v1alpha1.PodGroupRole{{Name: "w", Count: 4, CreatedLater: true, Template: tmpl}}, map[string]int32{"w": 1}, map[string]int32{"w": 3}},
		{"a role all present misses none", []v1alpha1.PodGroupRole{{Name: "w", Count: 2, CreatedLater: true, Template: tmpl}}, map[string]int32{"w": 2}, nil},
		{"a role not created later is waited for, not reserved", []v1alpha1.PodGroupRole{{Name: "d", Count: 1}}, nil, nil},
		{"a role with no template cannot be placed", []v1alpha1.PodGroupRole{{Name: "w", Count: 2, CreatedLater: true}}, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := Group{PodGroup: &v1alpha1.PodGroup{Spec: v1alpha1.PodGroupSpec{Roles: tc.roles}}, RoleActive: tc.active}
			if got := g.LaterMissing(); !maps.Equal(got, tc.want) {
				t.Errorf("LaterMissing = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTruncate: a message is kept whole within the API's limit, and cut
// to it, marked, beyond.
func TestTruncate(t *testing.T) {
	short := "fits"
	if got := Truncate(short); got != short {
		t.Errorf("Truncate(%q) = %q", short, got)
	}
	long := make([]byte, MaxConditionMessage+10)
	for i := range long {
		long[i] = 'x'
	}
	got := Truncate(string(long))
	if len(got) != MaxConditionMessage || got[len(got)-3:] != "..." {
		t.Errorf("Truncate of %d bytes: %d bytes ending %q, want %d ending \"...\"", len(long), len(got), got[len(got)-3:], MaxConditionMessage)
	}
}

package validation

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/muster-dev/muster/pkg/apis/scheduling"
)

// want is one expected error: its type and its exact field path.
type want struct {
	typ   field.ErrorType
	field string
}

func (w want) String() string { return fmt.Sprintf("%s %s", w.field, w.typ) }

// expectErrors fails unless errs holds exactly the wanted errors, by type and
// field path, in any order and with repeats counted.
func expectErrors(t *testing.T, errs field.ErrorList, wants ...want) {
	t.Helper()
	got := make([]string, 0, len(errs))
	for _, e := range errs {
		got = append(got, want{e.Type, e.Field}.String())
	}
	exp := make([]string, 0, len(wants))
	for _, w := range wants {
		exp = append(exp, w.String())
	}
	sort.Strings(got)
	sort.Strings(exp)
	if strings.Join(got, "\n") != strings.Join(exp, "\n") {
		t.Errorf("errors differ\nwant:\n  %s\ngot:\n  %s\nfull errors: %v",
			strings.Join(exp, "\n  "), strings.Join(got, "\n  "), errs)
	}
}

func required(f string) want     { return want{field.ErrorTypeRequired, f} }
func invalid(f string) want      { return want{field.ErrorTypeInvalid, f} }
func forbidden(f string) want    { return want{field.ErrorTypeForbidden, f} }
func duplicate(f string) want    { return want{field.ErrorTypeDuplicate, f} }
func tooMany(f string) want      { return want{field.ErrorTypeTooMany, f} }
func notSupported(f string) want { return want{field.ErrorTypeNotSupported, f} }

func basic() scheduling.PodGroupSchedulingPolicy {
	return scheduling.PodGroupSchedulingPolicy{Basic: &scheduling.BasicSchedulingPolicy{}}
}

func gang(n int32) scheduling.PodGroupSchedulingPolicy {
	return scheduling.PodGroupSchedulingPolicy{Gang: &scheduling.GangSchedulingPolicy{MinCount: n}}
}

func ptrTo[T any](v T) *T { return &v }

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// at returns a time n seconds after t0.
func at(n int) *metav1.Time {
	t := metav1.NewTime(t0.Add(time.Duration(n) * time.Second))
	return &t
}

func cond(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, LastTransitionTime: *at(0)}
}

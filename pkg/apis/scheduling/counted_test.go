package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestCountedIn(t *testing.T) {
	const group = "0b7f3c2e-8a41-4d55-9f0e-2c1d6b7a8e90"
	for _, tc := range []struct {
		name   string
		label  string
		want   corev1.PodPhase
		wantOK bool
	}{
		{name: "succeeded", label: CountedValue(corev1.PodSucceeded, group), want: corev1.PodSucceeded, wantOK: true},
		{name: "failed", label: CountedValue(corev1.PodFailed, group), want: corev1.PodFailed, wantOK: true},
		{name: "another group", label: CountedValue(corev1.PodSucceeded, "11111111-2222-3333-4444-555555555555")},
		{name: "unknown result", label: "Running." + group},
		{name: "no group", label: "Succeeded."},
		{name: "not ours", label: "yes"},
		{name: "absent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}}}
			if tc.label != "" {
				p.Labels[CountedLabel] = tc.label
			}
			got, ok := CountedIn(p, group)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("CountedIn(%q) = %q, %v; want %q, %v", tc.label, got, ok, tc.want, tc.wantOK)
			}
		})
	}
	if errs := validation.IsValidLabelValue(CountedValue(corev1.PodSucceeded, group)); len(errs) > 0 {
		t.Errorf("CountedValue is not a valid label value: %v", errs)
	}
}

package scheduling

import "testing"

func TestParseMinCount(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		want  int32
		valid bool
	}{
		{"a positive number is its value", "8", 8, true},
		{"a leading zero is base 10, not octal", "08", 8, true},
		{"a plus sign is accepted", "+8", 8, true},
		{"the largest int32 is accepted", "2147483647", 2147483647, true},
		{"zero is refused", "0", 0, false},
		{"a negative number is refused", "-1", 0, false},
		{"past int32 is refused", "2147483648", 0, false},
		{"hex is refused", "0x8", 0, false},
		{"the empty string is refused", "", 0, false},
		{"spaces are refused", " 8", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseMinCount(tt.in)
			if got != tt.want || ok != tt.valid {
				t.Errorf("ParseMinCount(%q) = %d, %v; want %d, %v", tt.in, got, ok, tt.want, tt.valid)
			}
		})
	}
}

func TestWorkloadRefAnnotations(t *testing.T) {
	tests := []struct {
		name               string
		ann                map[string]string
		workload, template string
		set                bool
		missing            string
	}{
		{"neither is not set and misses nothing", nil, "", "", false, ""},
		{"both are set", map[string]string{WorkloadAnnotation: "w", TemplateAnnotation: "t"}, "w", "t", true, ""},
		{"a workload alone misses the template", map[string]string{WorkloadAnnotation: "w"}, "w", "", false, TemplateAnnotation},
		{"a template alone misses the workload", map[string]string{TemplateAnnotation: "t"}, "", "t", false, WorkloadAnnotation},
		{"empty values still count as set", map[string]string{WorkloadAnnotation: "", TemplateAnnotation: ""}, "", "", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, tpl, set, missing := WorkloadRefAnnotations(tt.ann)
			if w != tt.workload || tpl != tt.template || set != tt.set || missing != tt.missing {
				t.Errorf("WorkloadRefAnnotations(%v) = %q, %q, %v, %q; want %q, %q, %v, %q", tt.ann, w, tpl, set, missing, tt.workload, tt.template, tt.set, tt.missing)
			}
		})
	}
}

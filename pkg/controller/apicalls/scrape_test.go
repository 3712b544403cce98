package apicalls

import "testing"

func TestParse(t *testing.T) {
	body := []byte(`# HELP muster_controller_api_requests_total API requests
# TYPE muster_controller_api_requests_total counter
muster_controller_api_requests_total{client="kube",resource="pods",verb="patch"} 16
muster_controller_api_requests_total{client="muster",resource="podgroups/status",verb="update"} 3
other_metric{client="kube"} 9
`)
	got, err := Parse(body)
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{{"kube", "patch", "pods"}: 16, {"muster", "update", "podgroups/status"}: 3}
	if len(got) != len(want) || got[Key{"kube", "patch", "pods"}] != 16 || got[Key{"muster", "update", "podgroups/status"}] != 3 {
		t.Errorf("Parse = %v, want %v", got, want)
	}
	if d := got.Minus(Counts{{"kube", "patch", "pods"}: 10}); len(d) != 2 || d[Key{"kube", "patch", "pods"}] != 6 {
		t.Errorf("Minus = %v, want pods patch 6 and status 3", d)
	}
	if _, err := Parse([]byte(`muster_controller_api_requests_total{client="a",resource="b",verb="c"} x`)); err == nil {
		t.Error("Parse of a bad value succeeded")
	}
}

package server

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCertOptionsComplete(t *testing.T) {
	tests := []struct {
		name                    string
		flag                    string
		inPod, standalone, file bool
		want                    string
	}{
		{name: "in a pod with no certificate file, internal", inPod: true, want: CertManagementInternal},
		{name: "in a pod with a certificate file, none", inPod: true, file: true, want: CertManagementNone},
		{name: "outside a pod, none", want: CertManagementNone},
		{name: "standalone, none", inPod: true, standalone: true, want: CertManagementNone},
		{name: "an explicit value is kept", flag: CertManagementInternal, want: CertManagementInternal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host := ""
			if tc.inPod {
				host = "10.0.0.1"
			}
			t.Setenv("KUBERNETES_SERVICE_HOST", host)
			o := NewCertOptions()
			o.Management = tc.flag
			o.complete(tc.standalone, tc.file)
			if o.Management != tc.want {
				t.Errorf("got %q, want %q", o.Management, tc.want)
			}
		})
	}
}

func TestCertOptionsValidate(t *testing.T) {
	tests := []struct {
		name       string
		mod        func(*CertOptions)
		standalone bool
		file       bool
		// wantErr is a substring of the error; empty wants none.
		wantErr string
	}{
		{name: "the defaults are valid", mod: func(*CertOptions) {}},
		{name: "none ignores the rest", mod: func(o *CertOptions) { o.Management = CertManagementNone; o.Secret = "bad" }},
		{name: "an unknown mode is refused", mod: func(o *CertOptions) { o.Management = "cert-manager" }, wantErr: "--cert-management must be"},
		{name: "internal with a certificate file is refused", file: true, wantErr: "drop --tls-cert-file"},
		{name: "internal in standalone mode is refused", standalone: true, wantErr: "needs a cluster"},
		{name: "a Secret without namespace is refused", mod: func(o *CertOptions) { o.Secret = "muster-apiserver-certs" }, wantErr: "--cert-secret"},
		{name: "a CA shorter than twice the serving certificate is refused", mod: func(o *CertOptions) { o.CALifetime = o.Lifetime }, wantErr: "--cert-ca-lifetime"},
		{name: "a serving lifetime under a minute is refused", mod: func(o *CertOptions) { o.Lifetime = time.Second }, wantErr: "--cert-lifetime"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewCertOptions()
			o.Management = CertManagementInternal
			if tc.mod != nil {
				tc.mod(o)
			}
			errs := o.Validate(tc.standalone, tc.file)
			switch {
			case tc.wantErr == "" && len(errs) > 0:
				t.Errorf("unexpected errors: %v", errs)
			case tc.wantErr != "" && !slices.ContainsFunc(errs, func(e error) bool { return strings.Contains(e.Error(), tc.wantErr) }):
				t.Errorf("errors %v, want one containing %q", errs, tc.wantErr)
			}
		})
	}
}

func TestCertOptionsNames(t *testing.T) {
	o := NewCertOptions()
	o.Service = "ns/svc"
	o.ExtraSANs = []string{"127.0.0.1", "localhost"}
	n := o.names()
	want := []string{"svc.ns.svc", "svc", "svc.ns", "svc.ns.svc.cluster.local", "localhost"}
	if !slices.Equal(n.DNSNames, want) {
		t.Errorf("DNS names %v, want %v", n.DNSNames, want)
	}
	if len(n.IPs) != 1 || n.IPs[0].String() != "127.0.0.1" {
		t.Errorf("IPs %v, want [127.0.0.1]", n.IPs)
	}
}

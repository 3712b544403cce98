package certs

import (
	"bytes"
	"crypto/x509"
	"net"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/util/cert"
)

var (
	t0       = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	testCfg  = Config{Names: Names{DNSNames: []string{"muster-apiserver.muster-system.svc"}, IPs: []net.IP{net.ParseIP("127.0.0.1")}}, Lifetime: 9 * time.Hour, CALifetime: 60 * time.Hour}
	allKnown = func(Certificate) bool { return true }
	noneYet  = func(Certificate) bool { return false }
)

// mustPlan plans from s at now and fails the test on an error.
func mustPlan(t *testing.T, now time.Time, s *State, published Published) (*State, []string) {
	t.Helper()
	next, why, err := Plan(now, s, testCfg, published)
	if err != nil {
		t.Fatalf("Plan at %s: %v", now, err)
	}
	return next, why
}

// fresh is the state Plan makes from nothing at t0.
func fresh(t *testing.T) *State {
	t.Helper()
	s, _ := mustPlan(t, t0, &State{}, noneYet)
	return s
}

// withNext is fresh's state once its CA has reached 2/3 of its life.
func withNext(t *testing.T) (*State, time.Time) {
	t.Helper()
	s := fresh(t)
	at := fraction(s.CA.Cert, RenewAt)
	next, _ := mustPlan(t, at, s, noneYet)
	return next, at
}

// bundleCerts parses a state's bundle.
func bundleCerts(t *testing.T, s *State) []*x509.Certificate {
	t.Helper()
	certs, err := cert.ParseCertsPEM(s.Bundle(time.Time{}))
	if err != nil {
		t.Fatalf("parsing bundle: %v", err)
	}
	return certs
}

func same(a, b *x509.Certificate) bool { return a != nil && b != nil && bytes.Equal(a.Raw, b.Raw) }

func TestPlan(t *testing.T) {
	tests := []struct {
		name string
		// state and now build the input.
		state func(t *testing.T) (*State, time.Time)
		// published is what the caBundles hold.
		published Published
		// check inspects the input and Plan's output (nil: nothing to do).
		check func(t *testing.T, in, out *State, why []string)
	}{{
		name:  "an empty Secret gets a CA and a serving certificate it signed, and the bundle holds that CA alone",
		state: func(*testing.T) (*State, time.Time) { return &State{}, t0 },
		check: func(t *testing.T, _, out *State, _ []string) {
			if out == nil || out.CA == nil || out.Serving == nil || out.NextCA != nil || out.PreviousCA != nil {
				t.Fatalf("got %+v, want a CA and a serving certificate only", out)
			}
			if err := out.Serving.Cert.CheckSignatureFrom(out.CA.Cert); err != nil {
				t.Errorf("serving certificate not signed by the CA: %v", err)
			}
			if got := bundleCerts(t, out); len(got) != 1 || !same(got[0], out.CA.Cert) {
				t.Errorf("bundle holds %d certificates, want the CA alone", len(got))
			}
			if !testCfg.Names.matches(out.Serving.Cert) {
				t.Errorf("serving names %v %v, want %v", out.Serving.Cert.DNSNames, out.Serving.Cert.IPAddresses, testCfg.Names)
			}
			if got, want := out.CA.Cert.NotAfter, t0.Add(testCfg.CALifetime); !got.Equal(want) {
				t.Errorf("CA valid until %s, want %s", got, want)
			}
		},
	}, {
		name: "nothing is due before 2/3 of the serving certificate's life",
		state: func(t *testing.T) (*State, time.Time) {
			s := fresh(t)
			return s, fraction(s.Serving.Cert, RenewAt).Add(-time.Second)
		},
		check: func(t *testing.T, _, out *State, why []string) {
			if out != nil {
				t.Errorf("Plan changed the state: %v", why)
			}
		},
	}, {
		name:  "at 2/3 of its life the serving certificate is reissued by the same CA, and the bundle does not change",
		state: func(t *testing.T) (*State, time.Time) { s := fresh(t); return s, fraction(s.Serving.Cert, RenewAt) },
		check: func(t *testing.T, in, out *State, _ []string) {
			if out == nil || same(out.Serving.Cert, in.Serving.Cert) {
				t.Fatal("serving certificate not reissued")
			}
			if !same(out.CA.Cert, in.CA.Cert) || !bytes.Equal(out.Bundle(time.Time{}), in.Bundle(time.Time{})) {
				t.Error("CA or bundle changed with a serving renewal")
			}
			if err := out.Serving.Cert.CheckSignatureFrom(in.CA.Cert); err != nil {
				t.Errorf("new serving certificate not signed by the CA: %v", err)
			}
		},
	}, {
		name: "at 2/3 of the CA's life a next CA joins the bundle, and the serving certificate stays signed by the current CA",
		state: func(t *testing.T) (*State, time.Time) {
			s := fresh(t)
			return s, fraction(s.CA.Cert, RenewAt)
		},
		published: noneYet,
		check: func(t *testing.T, in, out *State, _ []string) {
			if out == nil || out.NextCA == nil {
				t.Fatal("no next CA")
			}
			if !same(out.CA.Cert, in.CA.Cert) {
				t.Error("the current CA changed")
			}
			if err := out.Serving.Cert.CheckSignatureFrom(in.CA.Cert); err != nil {
				t.Errorf("serving certificate signed by the next CA before it was published: %v", err)
			}
			got := bundleCerts(t, out)
			if len(got) != 2 || !same(got[0], in.CA.Cert) || !same(got[1], out.NextCA.Cert) {
				t.Errorf("bundle holds %d certificates, want the current then the next CA", len(got))
			}
		},
	}, {
		name: "a next CA past its overlap that is not published yet does not sign",
		state: func(t *testing.T) (*State, time.Time) {
			s, _ := withNext(t)
			return s, fraction(s.NextCA.Cert, PromoteAfter).Add(time.Minute)
		},
		published: noneYet,
		check: func(t *testing.T, in, out *State, why []string) {
			if out != nil && !same(out.CA.Cert, in.CA.Cert) {
				t.Errorf("promoted an unpublished CA: %v", why)
			}
		},
	}, {
		name: "a next CA still in its overlap does not sign, even if published",
		state: func(t *testing.T) (*State, time.Time) {
			s, _ := withNext(t)
			return s, fraction(s.NextCA.Cert, PromoteAfter).Add(-time.Second)
		},
		published: allKnown,
		check: func(t *testing.T, in, out *State, why []string) {
			if out != nil && !same(out.CA.Cert, in.CA.Cert) {
				t.Errorf("promoted a CA before its overlap ended: %v", why)
			}
		},
	}, {
		name: "a published next CA past its overlap signs; the old CA stays in the bundle, without its key",
		state: func(t *testing.T) (*State, time.Time) {
			s, _ := withNext(t)
			return s, fraction(s.NextCA.Cert, PromoteAfter)
		},
		published: allKnown,
		check: func(t *testing.T, in, out *State, _ []string) {
			if out == nil || !same(out.CA.Cert, in.NextCA.Cert) || out.NextCA != nil {
				t.Fatal("next CA not promoted")
			}
			if !same(out.PreviousCA, in.CA.Cert) {
				t.Error("old CA not kept as the previous CA")
			}
			if err := out.Serving.Cert.CheckSignatureFrom(out.CA.Cert); err != nil {
				t.Errorf("serving certificate not reissued by the new CA: %v", err)
			}
			got := bundleCerts(t, out)
			if len(got) != 2 || !same(got[0], in.CA.Cert) || !same(got[1], in.NextCA.Cert) {
				t.Errorf("bundle holds %d certificates, want the previous then the current CA", len(got))
			}
			data := out.Data()
			if _, ok := data[PreviousCACertKey]; !ok {
				t.Error("previous CA not stored")
			}
			if _, ok := data["previous-ca.key"]; ok {
				t.Error("previous CA's key stored")
			}
		},
	}, {
		name: "the previous CA leaves the bundle when it expires",
		state: func(t *testing.T) (*State, time.Time) {
			s, _ := withNext(t)
			promoted, _ := mustPlan(t, fraction(s.NextCA.Cert, PromoteAfter), s, allKnown)
			return promoted, promoted.PreviousCA.NotAfter
		},
		check: func(t *testing.T, _, out *State, _ []string) {
			if out == nil || out.PreviousCA != nil {
				t.Fatal("expired previous CA kept")
			}
			if got := bundleCerts(t, out); len(got) != 1 || !same(got[0], out.CA.Cert) {
				t.Errorf("bundle holds %d certificates, want the current CA alone", len(got))
			}
		},
	}, {
		name: "an expired current CA gives way to the next one even if it is not published, rather than to a new one",
		state: func(t *testing.T) (*State, time.Time) {
			s, _ := withNext(t)
			return s, s.CA.Cert.NotAfter
		},
		published: noneYet,
		check: func(t *testing.T, in, out *State, _ []string) {
			if out == nil || !same(out.CA.Cert, in.NextCA.Cert) {
				t.Fatal("next CA not promoted")
			}
			if out.PreviousCA != nil {
				t.Error("expired CA kept in the bundle")
			}
		},
	}, {
		name: "changed names reissue the serving certificate",
		state: func(t *testing.T) (*State, time.Time) {
			s, _, err := Plan(t0, &State{}, Config{Names: Names{DNSNames: []string{"old.example"}}, Lifetime: testCfg.Lifetime, CALifetime: testCfg.CALifetime}, noneYet)
			if err != nil {
				t.Fatal(err)
			}
			return s, t0.Add(time.Minute)
		},
		check: func(t *testing.T, in, out *State, _ []string) {
			if out == nil || !testCfg.Names.matches(out.Serving.Cert) || !same(out.CA.Cert, in.CA.Cert) {
				t.Fatal("serving certificate not reissued for the new names by the same CA")
			}
		},
	}, {
		name: "a serving certificate cut short by its CA is not reissued again and again",
		state: func(t *testing.T) (*State, time.Time) {
			s, _ := withNext(t)
			// Past the next CA's overlap, unpublished: the current CA
			// keeps signing, and its certificates end with it.
			at := s.CA.Cert.NotAfter.Add(-testCfg.Lifetime / 2)
			capped, _ := mustPlan(t, at, s, noneYet)
			if capped == nil || !capped.Serving.Cert.NotAfter.Equal(s.CA.Cert.NotAfter) {
				t.Fatal("serving certificate not capped at the CA's end")
			}
			return capped, fraction(capped.Serving.Cert, RenewAt)
		},
		published: noneYet,
		check: func(t *testing.T, in, out *State, why []string) {
			if out != nil && !same(out.Serving.Cert, in.Serving.Cert) {
				t.Errorf("reissued a certificate that cannot outlive its CA: %v", why)
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, now := tc.state(t)
			published := tc.published
			if published == nil {
				published = allKnown
			}
			out, why, err := Plan(now, in, testCfg, published)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, in, out, why)
		})
	}
}

func TestLoad(t *testing.T) {
	good := fresh(t).Data()
	tests := []struct {
		name string
		data func() map[string][]byte
		// wantErrs is how many parts are reported unusable.
		wantErrs int
		check    func(t *testing.T, s *State)
	}{{
		name: "a stored state loads as it was stored, and nothing is due",
		data: func() map[string][]byte { return good },
		check: func(t *testing.T, s *State) {
			if s.CA == nil || s.Serving == nil {
				t.Fatal("CA or serving certificate not loaded")
			}
			if out, why := mustPlan(t, t0.Add(time.Minute), s, allKnown); out != nil {
				t.Errorf("Plan changed a loaded fresh state: %v", why)
			}
		},
	}, {
		name: "a corrupt Secret is reported and replaced with a new CA and serving certificate",
		data: func() map[string][]byte {
			return map[string][]byte{CACertKey: []byte("junk"), CAKeyKey: []byte("junk"), ServingCertKey: []byte("x")}
		},
		wantErrs: 2,
		check: func(t *testing.T, s *State) {
			out, _ := mustPlan(t, t0, s, allKnown)
			if out == nil || out.CA == nil || out.Serving == nil {
				t.Fatal("corrupt Secret not replaced")
			}
		},
	}, {
		name: "a CA whose key is lost stays trusted as the previous CA while a new CA takes over",
		data: func() map[string][]byte {
			d := map[string][]byte{}
			for k, v := range good {
				d[k] = v
			}
			d[CAKeyKey] = []byte("lost")
			return d
		},
		wantErrs: 1,
		check: func(t *testing.T, s *State) {
			old, _ := parseCert(good[CACertKey])
			if !same(s.PreviousCA, old) {
				t.Fatal("CA without its key not kept as the previous CA")
			}
			out, _ := mustPlan(t, t0.Add(time.Minute), s, allKnown)
			if out == nil || same(out.CA.Cert, old) || !same(out.PreviousCA, old) {
				t.Fatal("no new CA, or the old one no longer trusted")
			}
			if out.Serving.Cert.CheckSignatureFrom(out.CA.Cert) != nil {
				t.Error("serving certificate not reissued by the new CA")
			}
		},
	}, {
		name: "a key of another certificate is refused",
		data: func() map[string][]byte {
			other := fresh(t).Data()
			d := map[string][]byte{}
			for k, v := range good {
				d[k] = v
			}
			d[ServingKeyKey] = other[ServingKeyKey]
			return d
		},
		wantErrs: 1,
		check: func(t *testing.T, s *State) {
			if s.Serving != nil {
				t.Error("mismatched serving pair loaded")
			}
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, errs := Load(tc.data())
			if len(errs) != tc.wantErrs {
				t.Errorf("got %d errors %v, want %d", len(errs), errs, tc.wantErrs)
			}
			tc.check(t, s)
		})
	}
}

// TestRotationNeverBreaksTrust steps through three CA lifetimes and checks,
// at every step, what makes a rotation safe for kube-apiserver: the
// certificate served now, and the one served a step ago (which a replica
// may still present), both verify against the bundle published a step ago
// (which kube-apiserver may still hold) and against the new one.
func TestRotationNeverBreaksTrust(t *testing.T) {
	step := testCfg.Lifetime / 40
	s := fresh(t)
	servingRenewals, caRotations := 0, 0
	for now := t0; now.Before(t0.Add(3 * testCfg.CALifetime)); now = now.Add(step) {
		published := s.Bundle(time.Time{})
		out, why, err := Plan(now, s, testCfg, func(c Certificate) bool { return bundleHolds(published, c) })
		if err != nil {
			t.Fatal(err)
		}
		if out == nil {
			continue
		}
		for _, w := range why {
			if strings.Contains(w, "no usable CA") {
				t.Fatalf("at %s: started over: %v", now, why)
			}
		}
		if !same(out.CA.Cert, s.CA.Cert) {
			caRotations++
		}
		if !same(out.Serving.Cert, s.Serving.Cert) {
			servingRenewals++
		}
		for _, c := range []struct {
			what   string
			cert   *x509.Certificate
			bundle []byte
		}{
			{"new certificate, old bundle", out.Serving.Cert, published},
			{"new certificate, new bundle", out.Serving.Cert, out.Bundle(time.Time{})},
			{"old certificate, new bundle", s.Serving.Cert, out.Bundle(time.Time{})},
		} {
			if err := verify(c.cert, c.bundle, now); err != nil {
				t.Fatalf("at %s (%s) after %v: %v", now.Sub(t0), c.what, why, err)
			}
		}
		s = out
	}
	if caRotations < 2 || servingRenewals < 2*caRotations {
		t.Errorf("%d CA rotations and %d serving renewals in three CA lifetimes; want at least 2 and twice as many", caRotations, servingRenewals)
	}
}

// verify checks c as kube-apiserver would, against bundle at now.
func verify(c *x509.Certificate, bundle []byte, now time.Time) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(bundle)
	_, err := c.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, DNSName: testCfg.Names.DNSNames[0], KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	return err
}

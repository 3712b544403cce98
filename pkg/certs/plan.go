package certs

import (
	"crypto/x509"
	"fmt"
	"time"
)

// Config says which certificates to keep and for how long.
type Config struct {
	// Names are the serving certificate's subject alternative names.
	Names Names
	// Lifetime is the serving certificate's.
	Lifetime time.Duration
	// CALifetime is each CA's.
	CALifetime time.Duration
}

// The schedule, in fractions of a certificate's validity.
const (
	// RenewAt is when a serving certificate is replaced, and when the next
	// CA is made and added to the bundle: two thirds, as cert-manager
	// renews by default, leaving a third of the lifetime to notice and
	// repair a rotation that keeps failing.
	RenewAt = 2.0 / 3
	// PromoteAfter is how long, from its start, a next CA sits in the
	// published bundle before it signs anything: a sixth of its lifetime,
	// far longer than kube-apiserver takes to see a new caBundle (its
	// informers, seconds). The CA it replaces is then at five sixths of its
	// life, and stays trusted for the last sixth.
	PromoteAfter = 1.0 / 6
)

// Published reports whether every caBundle Muster keeps holds c.
type Published func(c Certificate) bool

// Certificate is a parsed X.509 certificate.
type Certificate = *x509.Certificate

// Plan returns the state to store at now, given the stored one, and why it
// differs; it returns nil when nothing is to change. It is the one place
// that decides rotation: every replica runs it on the Secret it read, and
// a write of its result carries that Secret's resourceVersion, so when two
// replicas decide at once one write wins and the other re-reads.
func Plan(now time.Time, s *State, cfg Config, published Published) (*State, []string, error) {
	n := *s
	var why []string
	if n.NextCA != nil && !usableCA(now, n.NextCA) {
		why = append(why, fmt.Sprintf("dropped next CA %s: expired or not a CA", describe(n.NextCA.Cert)))
		n.NextCA = nil
	}
	switch {
	case !usableCA(now, n.CA) && n.NextCA != nil:
		// The current CA is gone (expired while no replica ran, or
		// corrupt): the next one is the best there is, published or not.
		why = append(why, fmt.Sprintf("CA missing or expired; promoted next CA %s", describe(n.NextCA.Cert)))
		n.promote(now)
	case !usableCA(now, n.CA):
		ca, err := newCA(now, cfg.CALifetime)
		if err != nil {
			return nil, nil, err
		}
		why = append(why, fmt.Sprintf("no usable CA; made CA %s", describe(ca.Cert)))
		n.CA, n.Serving = ca, nil
	case n.NextCA == nil && !now.Before(fraction(n.CA.Cert, RenewAt)):
		ca, err := newCA(now, cfg.CALifetime)
		if err != nil {
			return nil, nil, err
		}
		why = append(why, fmt.Sprintf("CA %s is at 2/3 of its life; added next CA %s to the bundle", describe(n.CA.Cert), describe(ca.Cert)))
		n.NextCA = ca
	case n.NextCA != nil && !now.Before(fraction(n.NextCA.Cert, PromoteAfter)) && published(n.NextCA.Cert):
		why = append(why, fmt.Sprintf("next CA %s has been published for its overlap; it signs from now on, and CA %s stays trusted until it expires",
			describe(n.NextCA.Cert), describe(n.CA.Cert)))
		n.promote(now)
	}
	if n.PreviousCA != nil && !now.Before(n.PreviousCA.NotAfter) {
		why = append(why, fmt.Sprintf("dropped previous CA %s: expired", describe(n.PreviousCA)))
		n.PreviousCA = nil
	}
	if reason := servingReason(now, &n, cfg); reason != "" {
		serving, err := newServing(now, cfg.Lifetime, n.CA, cfg.Names)
		if err != nil {
			return nil, nil, err
		}
		why = append(why, fmt.Sprintf("issued serving certificate %s: %s", describe(serving.Cert), reason))
		n.Serving = serving
	}
	if len(why) == 0 {
		return nil, nil, nil
	}
	return &n, why, nil
}

// promote makes the next CA the current one; the current one, while it is
// still valid, becomes the previous one, trusted but signing nothing. The
// serving certificate is then reissued, as it is no longer signed by the
// current CA.
func (s *State) promote(now time.Time) {
	if s.CA != nil && now.Before(s.CA.Cert.NotAfter) {
		s.PreviousCA = s.CA.Cert
	}
	s.CA, s.NextCA = s.NextCA, nil
}

// servingReason says why the serving certificate must be reissued, or ""
// when it need not be.
func servingReason(now time.Time, s *State, cfg Config) string {
	switch {
	case s.Serving == nil:
		return "none stored"
	case s.Serving.Cert.CheckSignatureFrom(s.CA.Cert) != nil:
		return "not signed by the current CA"
	case !cfg.Names.matches(s.Serving.Cert):
		return "its names differ from those configured"
	case !now.Before(s.Serving.Cert.NotAfter):
		return "expired"
	case !now.Before(fraction(s.Serving.Cert, RenewAt)):
		// A certificate cut short by its CA's end is not replaced by one
		// that ends no later: the CA's rotation replaces it.
		end := now.Add(cfg.Lifetime)
		if s.CA.Cert.NotAfter.Before(end) {
			end = s.CA.Cert.NotAfter
		}
		if end.After(s.Serving.Cert.NotAfter) {
			return "at 2/3 of its life"
		}
	}
	return ""
}

// usableCA reports whether kp is a CA that can sign at now.
func usableCA(now time.Time, kp *KeyPair) bool {
	return kp != nil && kp.Cert.IsCA && kp.Cert.KeyUsage&x509.KeyUsageCertSign != 0 && now.Before(kp.Cert.NotAfter)
}

// describe names a certificate in logs and reasons.
func describe(c *x509.Certificate) string {
	return fmt.Sprintf("%q (%s, valid until %s)", c.Subject.CommonName, fingerprint(c), c.NotAfter.UTC().Format(time.RFC3339))
}

package redisroute

import (
	"bytes"
	"crypto/tls"
	"log/slog"
	"time"
)

// newClientCert gives every new TLS connection the client certificate its
// files hold then (fileSource): a certificate renewed on disk, as
// cert-manager renews one before it expires, is presented from the next
// connection on. Loaded once, it would be presented until it expired, and
// then every new connection refused. The expiry gauge follows the
// certificate in use.
func newClientCert(certFile, keyFile string, first tls.Certificate, m *metrics, log *slog.Logger) *fileSource[tls.Certificate] {
	expiry := func(c tls.Certificate) {
		if c.Leaf != nil {
			m.clientCertExpiry.Set(float64(c.Leaf.NotAfter.Unix()))
		}
	}
	expiry(first)
	return (&fileSource[tls.Certificate]{what: "redis TLS client certificate", files: []string{certFile, keyFile},
		load: func() (tls.Certificate, error) { return tls.LoadX509KeyPair(certFile, keyFile) },
		same: func(a, b tls.Certificate) bool {
			return len(a.Certificate) > 0 && len(b.Certificate) > 0 && bytes.Equal(a.Certificate[0], b.Certificate[0])
		},
		changed: expiry, errors: m.clientCertFileErrors, log: log}).from(first)
}

// withClientCert returns a copy of t that asks src for its client
// certificate at each handshake. As crypto/tls does with Certificates, a
// certificate the server says it cannot accept (its CAs, its signature
// schemes) is not sent: no certificate is.
func withClientCert(t *tls.Config, src *fileSource[tls.Certificate]) *tls.Config {
	t = t.Clone()
	t.GetClientCertificate = func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
		c := src.get()
		if cri.SupportsCertificate(&c) != nil {
			return &tls.Certificate{}, nil
		}
		return &c, nil
	}
	return t
}

// WithCertExpiry returns a copy of t (nil without TLS) that tells seen
// when the certificate a node presents at each handshake expires: once it
// has, every new connection to the node fails verification, whatever the
// client holds (unless it skips verification).
func WithCertExpiry(t *tls.Config, seen func(notAfter time.Time)) *tls.Config {
	if t == nil {
		return nil
	}
	t = t.Clone()
	verify := t.VerifyConnection
	t.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) > 0 {
			seen(cs.PeerCertificates[0].NotAfter)
		}
		if verify != nil {
			return verify(cs)
		}
		return nil
	}
	return t
}

// exportCertExpiry, with every node check, exports the expiry each node of
// the slot map presented last: from the check, not the handshake, so that
// a node back in the slot map (its series made again at 0) shows what it
// presented before, and a seed address outside it (a DNS name) shows none.
func (r *Router) exportCertExpiry() {
	for _, n := range r.topo.Load().nodes {
		if at := n.certExpiry.Load(); at != 0 {
			r.m.nodeCertExpiry.WithLabelValues(n.addr).Set(float64(at))
		}
	}
}

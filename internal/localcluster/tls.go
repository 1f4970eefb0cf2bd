package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// tlsFiles are the certificate files every node of a TLS cluster uses,
// and the CA that signed them, which can sign more (IssueClientCert).
type tlsFiles struct {
	ca, cert, key string
	pool          *x509.CertPool
	caCert        *x509.Certificate
	caKey         *ecdsa.PrivateKey
	node          tls.Certificate // cert and key, loaded
}

// writeTLSFiles makes a throwaway CA and a certificate for 127.0.0.1
// signed by it, valid for a day, in dir.
func writeTLSFiles(dir string) (*tlsFiles, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "apollo localcluster CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	f := &tlsFiles{ca: filepath.Join(dir, "ca.crt"), cert: filepath.Join(dir, "server.crt"), key: filepath.Join(dir, "server.key"),
		pool: x509.NewCertPool(), caCert: caCert, caKey: caKey}
	f.pool.AddCert(caCert)
	if err := os.WriteFile(f.ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		return nil, fmt.Errorf("write %s: %w", f.ca, err)
	}
	// The nodes' certificate serves clients, and is their client
	// certificate on the cluster bus and for replication.
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames: []string{"localhost"}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	if err := f.sign(tmpl, f.cert, f.key); err != nil {
		return nil, err
	}
	if f.node, err = tls.LoadX509KeyPair(f.cert, f.key); err != nil {
		return nil, err
	}
	return f, nil
}

// sign signs tmpl with the CA and writes the certificate and a new key to
// certFile and keyFile, each replaced at once (ReplaceFile).
func (f *tlsFiles) sign(tmpl *x509.Certificate, certFile, keyFile string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, f.caCert, &key.PublicKey, f.caKey)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	for _, w := range []struct {
		path  string
		block *pem.Block
	}{{keyFile, &pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}}, {certFile, &pem.Block{Type: "CERTIFICATE", Bytes: der}}} {
		if err := ReplaceFile(w.path, pem.EncodeToMemory(w.block), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// IssueClientCert writes a client certificate signed by the cluster's CA,
// valid from now until notAfter, and its key, to certFile and keyFile
// (each replaced at once): what a cluster with TLSClientAuth asks of its
// clients. A certificate issued again to the same files is a rotation.
func (c *Cluster) IssueClientCert(certFile, keyFile string, notAfter time.Time) error {
	if c.tls == nil {
		return fmt.Errorf("the cluster does not use TLS")
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: "apollo client"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	return c.tls.sign(tmpl, certFile, keyFile)
}

// TLSConfig is what a client needs to talk to a TLS cluster (nil without
// TLS): its CA, and the nodes' own certificate as a client certificate,
// which a cluster with TLSClientAuth asks for.
func (c *Cluster) TLSConfig() *tls.Config {
	if c.tls == nil {
		return nil
	}
	return &tls.Config{RootCAs: c.tls.pool, MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{c.tls.node}}
}

// CAFile is the PEM file of the cluster's CA ("" without TLS).
func (c *Cluster) CAFile() string {
	if c.tls == nil {
		return ""
	}
	return c.tls.ca
}

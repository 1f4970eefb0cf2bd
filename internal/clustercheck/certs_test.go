package clustercheck

import (
	"strings"
	"testing"
	"time"
)

func TestCertFindingsNameNodesWhoseCertificateExpiresSoon(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { t := now.Add(d); return &t }
	nodes := []Node{
		{Addr: "plain", Role: "primary"}, // no TLS
		{Addr: "far", Role: "replica", CertExpiry: at(60 * 24 * time.Hour)},
		{Addr: "soon", Role: "replica", CertExpiry: at(3*24*time.Hour + 30*time.Minute)},
		{Addr: "edge", Role: "primary", CertExpiry: at(certWarnBefore)},
	}
	got := certFindings(nodes, now)
	if len(got) != 2 {
		t.Fatalf("certFindings = %+v, want soon and edge", got)
	}
	for i, want := range []struct{ node, says string }{
		{"soon", "this replica presents expires at 2026-12-08T12:30:00Z, in 72h30m0s"},
		{"edge", "expires at 2026-12-19T12:00:00Z"},
	} {
		f := got[i]
		if f.Severity != Warning || f.Code != "node_cert_expiring" || f.Node != want.node || !strings.Contains(f.Message, want.says) {
			t.Errorf("finding %d = %+v, want a node_cert_expiring warning on %s saying %q", i, f, want.node, want.says)
		}
	}
}

package clustercheck

import (
	"time"

	"github.com/apollo-platform/apollo/internal/redisroute"
)

// Severity of a finding. The check's exit code is the highest one.
type Severity int

// Severities.
const (
	Info     Severity = 0
	Warning  Severity = 1
	Critical Severity = 2
)

func (s Severity) String() string {
	switch s {
	case Warning:
		return "warning"
	case Critical:
		return "critical"
	}
	return "info"
}

// MarshalText makes severities readable in JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Finding is one risk, explained.
type Finding struct {
	Severity Severity `json:"severity"`
	Code     string   `json:"code"`
	Node     string   `json:"node,omitempty"`
	Message  string   `json:"message"`
}

// Node is one node as the cluster and our probe see it.
type Node struct {
	Addr      string   `json:"addr"`
	ID        string   `json:"id"`
	Role      string   `json:"role"` // primary or replica
	Primary   string   `json:"primary,omitempty"`
	Flags     []string `json:"flags"`
	Slots     int      `json:"slots"`
	Reachable bool     `json:"reachable"`
	ProbeMs   float64  `json:"probe_ms,omitempty"` // a keyed read on the node's own slots
	LinkUp    *bool    `json:"link_up,omitempty"`  // replicas: replication link
	LagBytes  *int64   `json:"lag_bytes,omitempty"`
	// Clock is the node's clock (TIME) against this machine's; nil when
	// it could not be read.
	Clock *redisroute.NodeClock `json:"clock,omitempty"`
	Error string                `json:"error,omitempty"`

	// CredentialsError is the node's refusal of Apollo's credentials
	// (WRONGPASS, NOAUTH, NOPERM, ...); empty when they work or were not tried.
	CredentialsError string `json:"credentials_error,omitempty"`
	// OpenWithoutAuth: a password is configured, yet the node serves a
	// client that sends none.
	OpenWithoutAuth bool `json:"open_without_auth,omitempty"`
	// ACLUsers is ACL USERS on the node, sorted; ACLError says why it could
	// not be read with Apollo's credentials.
	ACLUsers []string `json:"acl_users,omitempty"`
	ACLError string   `json:"acl_error,omitempty"`
	// CertExpiry is when the TLS certificate the node presented expires;
	// nil without TLS, or when no handshake completed.
	CertExpiry *time.Time `json:"cert_expiry,omitempty"`
	// Denied are the rights (Options.Rights, named as
	// redisroute.NodeRights.Denied) the node's ACL denies Apollo's user.
	Denied []string `json:"denied,omitempty"`
	// ACLUser is ACL GETUSER of Apollo's user, on one line (password hashes
	// shortened); empty when the user may not run it.
	ACLUser string `json:"acl_user,omitempty"`
	// Persistence is the node's appendonly, appendfsync and save settings;
	// nil when CONFIG GET is not allowed.
	Persistence *Persistence `json:"persistence,omitempty"`
	// Memory is the node's used memory, maxmemory and eviction policy;
	// nil when INFO memory could not be read.
	Memory *Memory `json:"memory,omitempty"`
	// Disk says whether the node's last RDB snapshot or AOF write failed
	// (it then refuses every write, MISCONF); nil when INFO persistence
	// could not be read.
	Disk *redisroute.NodePersistence `json:"disk,omitempty"`
	// OpenSlots are the slot migrations the node has open, as its own line
	// of CLUSTER NODES shows them: "[slot->-id]", "[slot-<-id]".
	OpenSlots []string `json:"open_slots,omitempty"`
}

// Shard is a primary and its replicas.
type Shard struct {
	Primary  string   `json:"primary"`
	Replicas []string `json:"replicas"`
	Slots    int      `json:"slots"`
}

// Report is the whole check, the JSON document of --json.
type Report struct {
	Seed               string    `json:"seed"`
	ClusterState       string    `json:"cluster_state"`
	SlotsCovered       int       `json:"slots_covered"`
	NodeTimeoutMs      int64     `json:"node_timeout_ms,omitempty"`
	AllowReadsWhenDown string    `json:"allow_reads_when_down,omitempty"`
	ReadPolicy         string    `json:"read_policy"`
	User               string    `json:"user"` // the ACL user Apollo logs in as ("default" without one)
	Shards             []Shard   `json:"shards"`
	Nodes              []Node    `json:"nodes"`
	Findings           []Finding `json:"findings"`
	Status             Severity  `json:"status"`
	CheckedAt          time.Time `json:"checked_at"`
}

func (r *Report) add(sev Severity, code, node, msg string) {
	r.Findings = append(r.Findings, Finding{Severity: sev, Code: code, Node: node, Message: msg})
	r.Status = max(r.Status, sev)
}

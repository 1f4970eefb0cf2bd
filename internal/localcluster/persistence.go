package localcluster

import (
	"fmt"
	"strings"
)

// Persistence is what a node keeps on disk, and so what a restart of
// every node of a shard keeps.
type Persistence string

// Persistence settings.
const (
	// PersistenceNone keeps nothing: a restarted node comes back empty.
	PersistenceNone Persistence = "none"
	// PersistenceRDB snapshots the data set each second in which it changed
	// (save 1 1): a restart loses what changed since the last snapshot.
	PersistenceRDB Persistence = "rdb"
	// PersistenceAOF appends every write to a file (appendfsync everysec):
	// a process crash loses nothing the node acknowledged, since the write
	// reached the kernel before the reply; a host crash loses up to a second.
	PersistenceAOF Persistence = "aof"
	// PersistenceAOFAlways fsyncs the file before every reply.
	PersistenceAOFAlways Persistence = "aof-always"
)

// ParsePersistence parses a Persistence by name; "" is none.
func ParsePersistence(s string) (Persistence, error) {
	switch p := Persistence(strings.TrimSpace(s)); p {
	case "":
		return PersistenceNone, nil
	case PersistenceNone, PersistenceRDB, PersistenceAOF, PersistenceAOFAlways:
		return p, nil
	}
	return "", fmt.Errorf("unknown persistence %q (want none, rdb, aof or aof-always)", s)
}

// directives are the redis.conf lines of the setting.
func (p Persistence) directives() []string {
	switch p {
	case PersistenceRDB:
		return []string{"save 1 1", "appendonly no"}
	case PersistenceAOF:
		return []string{`save ""`, "appendonly yes", "appendfsync everysec"}
	case PersistenceAOFAlways:
		return []string{`save ""`, "appendonly yes", "appendfsync always"}
	}
	return []string{`save ""`, "appendonly no"}
}

// Set parses a flag's value (flag.Value).
func (p *Persistence) Set(s string) error {
	v, err := ParsePersistence(s)
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// String names the setting as its flag does.
func (p Persistence) String() string {
	if p == "" {
		return string(PersistenceNone)
	}
	return string(p)
}

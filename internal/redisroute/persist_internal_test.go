package redisroute

import "testing"

// INFO persistence says what failed, not whether the node refuses writes
// (a failed snapshot refuses nothing without save points): that is its
// PING's answer (ReadPersistence), so a parsed reading never RefusesWrites.
func TestParsePersistenceReadsFailedSnapshotsAndAOFWrites(t *testing.T) {
	for _, tc := range []struct {
		name, info string
		want       NodePersistence
		ok         bool
	}{
		{"both fine", "# Persistence\r\nloading:0\r\nrdb_last_bgsave_status:ok\r\naof_enabled:0\r\naof_last_write_status:ok\r\n",
			NodePersistence{Addr: "n"}, true},
		{"a failed snapshot", "rdb_last_bgsave_status:err\r\naof_last_write_status:ok\r\n",
			NodePersistence{Addr: "n", SnapshotFailed: true}, true},
		{"a failed AOF write or fsync", "aof_last_write_status:err\r\nrdb_last_bgsave_status:ok\r\n",
			NodePersistence{Addr: "n", AOFFailed: true}, true},
		{"not INFO persistence", "role:master\r\n", NodePersistence{Addr: "n"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parsePersistence("n", tc.info)
			if got != tc.want || ok != tc.ok || got.RefusesWrites {
				t.Errorf("parsePersistence = %+v, %v, want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

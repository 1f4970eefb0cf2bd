package redisroute

import "testing"

func TestParseNodeRunReadsTheProcessAndItsKeys(t *testing.T) {
	for _, tc := range []struct {
		name, info string
		want       nodeRun
		ok         bool
	}{
		{"keys of every database, loading",
			"# Server\r\nrun_id:abc\r\n# Keyspace\r\ndb0:keys=12,expires=3,avg_ttl=0\r\ndb1:keys=3,expires=0,avg_ttl=0\r\n# Persistence\r\nloading:1\r\n",
			nodeRun{Addr: "n", RunID: "abc", Keys: 15, Loading: true}, true},
		{"an empty keyspace", "run_id:abc\r\n# Keyspace\r\nloading:0\r\n", nodeRun{Addr: "n", RunID: "abc"}, true},
		{"no run_id", "# Keyspace\r\ndb0:keys=1,expires=0\r\n", nodeRun{Addr: "n", Keys: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, ok := parseNodeRun("n", tc.info); got != tc.want || ok != tc.ok {
				t.Errorf("parseNodeRun = %+v, %v, want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestJudgeRestart(t *testing.T) {
	run := func(id string, keys int64, loading bool) nodeRun {
		return nodeRun{RunID: id, Keys: keys, Loading: loading}
	}
	for _, tc := range []struct {
		name      string
		last, now nodeRun
		seen      bool
		want      restartVerdict
	}{
		{"first check", nodeRun{}, run("a", 10, false), false, notRestarted},
		{"same process, keys gone (deleted, expired)", run("a", 300, false), run("a", 0, false), true, notRestarted},
		{"run_id unknown before", run("", 300, false), run("b", 0, false), true, notRestarted},
		{"restarted, still loading", run("a", 300, false), run("b", 10, true), true, restartUndecided},
		{"restarted with its data", run("a", 300, false), run("b", 296, false), true, restartKept},
		{"restarted with half", run("a", 300, false), run("b", 150, false), true, restartKept},
		{"restarted empty", run("a", 300, false), run("b", 0, false), true, restartLost},
		{"restarted with an old snapshot", run("a", 300, false), run("b", 120, false), true, restartLost},
		{"restarted with one key of three", run("a", 3, false), run("b", 1, false), true, restartLost},
		{"restarted empty, empty before", run("a", 0, false), run("b", 0, false), true, restartKept},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := judgeRestart(tc.last, tc.seen, tc.now); got != tc.want {
				t.Errorf("judgeRestart = %v, want %v", got, tc.want)
			}
		})
	}
}

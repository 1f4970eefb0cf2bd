package app

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"testing"
)

// What net/http's servers say below the handlers is a JSON warning of the
// instance's log, through its output, not a plain line of the standard
// logger's straight to stderr.
func TestNetHTTPsOwnMessagesAreLinesOfTheInstancesLog(t *testing.T) {
	var out bytes.Buffer
	log := NewLogger(Config{LogLevel: slog.LevelInfo}, &out)
	httpServerLog(log).Printf("http: Accept error: accept tcp [::]:8080: accept4: too many open files; retrying in 5ms")
	var line struct {
		Level, Msg, Component string
	}
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("not one JSON line: %q (%v)", out.String(), err)
	}
	if line.Level != "WARN" || line.Component != "http-server" || line.Msg != "http: Accept error: accept tcp [::]:8080: accept4: too many open files; retrying in 5ms" {
		t.Errorf("line = %+v, want a warning of component http-server with net/http's message", line)
	}
}

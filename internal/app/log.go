package app

import (
	"io"
	stdlog "log"
	"log/slog"

	"github.com/apollo-platform/apollo/internal/logsink"
)

// NewLogger returns the structured logger the config asks for, writing
// to w as it logs.
func NewLogger(cfg Config, w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: cfg.LogLevel}
	if cfg.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

// NewLogging returns the process's logger over w (its stderr) through a
// log output that never makes a caller wait for w: a request's answer,
// and a background loop, no longer wait on a pipe nobody reads (logsink).
// Lines it had to drop are counted (give the Sink to New with
// WithLogOutput) and said in a line once w takes lines again. The caller
// closes the Sink when it has nothing more to log.
func NewLogging(cfg Config, w io.Writer) (*slog.Logger, *logsink.Sink) {
	var log *slog.Logger
	out := logsink.New(w, logsink.Config{OnDropped: func(lines uint64) {
		log.Warn("log lines dropped while the log output was blocked", "lines", lines)
	}})
	log = NewLogger(cfg, out) // before any line is written, so before OnDropped can run
	return log, out
}

// httpServerLog is where net/http's servers say what goes wrong below the
// handlers (an accept that failed, a panic, a TLS handshake): the
// instance's log, as a structured warning. By default they used the
// standard logger, which wrote a plain line into the JSON stream,
// straight to stderr, past the log output: with a pipe nobody read, the
// accept loop that said it stopped accepting.
func httpServerLog(log *slog.Logger) *stdlog.Logger {
	return slog.NewLogLogger(log.With("component", "http-server").Handler(), slog.LevelWarn)
}

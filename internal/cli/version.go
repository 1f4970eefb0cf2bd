package cli

import (
	"context"
	"fmt"
	"runtime/debug"
)

func runVersion(_ context.Context, e env, args []string) error {
	fs := newFlagSet(e, "version", "Print the version and build information.")
	if err := parseFlags(e, fs, args); err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, versionString())
	return nil
}

func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "apollo (unknown build)"
	}
	rev, modified := "unknown", ""
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " (modified)"
			}
		}
	}
	return fmt.Sprintf("apollo %s revision %s%s %s", bi.Main.Version, rev, modified, bi.GoVersion)
}

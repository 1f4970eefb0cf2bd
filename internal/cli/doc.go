// Package cli implements the apollo subcommands, one file each. Run is the
// only entry point; it never calls os.Exit and writes only to the writers it
// is given, so every subcommand can be tested in process.
package cli

// Package secret reads credentials from files and keeps them out of what
// a process shows: its arguments as pprof prints them, its logs.
//
// A secret given by flag is on the process's command line, which every
// local user can read in /proc and which /debug/pprof/cmdline would
// serve; a file (a mounted Kubernetes Secret, say) or the environment is
// the way to pass one, and the flag stays for local use.
package secret

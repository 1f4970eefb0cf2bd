package secret

import (
	"slices"
	"strings"
)

// Redacted is what stands in for a secret wherever one would be shown.
const Redacted = "[redacted]"

// RedactArgs returns args with the value of every flag named in names
// replaced by Redacted, in each form the flag package accepts: -name=v,
// --name=v, and -name v or --name v (the value is the next argument). A
// "--" does not stop it: the flag package takes "--" as a value of the
// flag before it, so whatever follows may still be a flag; redacting a
// positional argument that looks like a secret flag costs nothing.
func RedactArgs(args []string, names ...string) []string {
	out := slices.Clone(args)
	for i := 0; i < len(out); i++ {
		flagPart, _, hasValue := strings.Cut(out[i], "=")
		if !strings.HasPrefix(flagPart, "-") || !slices.Contains(names, strings.TrimPrefix(strings.TrimPrefix(flagPart, "-"), "-")) {
			continue
		}
		if hasValue {
			out[i] = flagPart + "=" + Redacted
		} else if i+1 < len(out) {
			out[i+1] = Redacted
			i++
		}
	}
	return out
}

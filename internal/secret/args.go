package secret

import "strings"

// Redacted is what stands in for a secret wherever one would be shown.
const Redacted = "[redacted]"

// RedactArgs returns args with the value of every flag named in names
// replaced by Redacted, in each form the flag package accepts: -name=v,
// --name=v, and -name v or --name v (the value is the next argument). A
// "--" does not stop it: the flag package takes "--" as a value of the
// flag before it, so whatever follows may still be a flag; redacting a
// positional argument that looks like a secret flag costs nothing.
func RedactArgs(args []string, names ...string) []string {
	out := make([]string, len(args))
	copy(out, args)
	secret := func(name string) bool {
		for _, n := range names {
			if n == name {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(out); i++ {
		a := out[i]
		if !strings.HasPrefix(a, "-") {
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		name, _, hasValue := strings.Cut(name, "=")
		if !secret(name) {
			continue
		}
		if hasValue {
			out[i] = a[:strings.Index(a, "=")+1] + Redacted
		} else if i+1 < len(out) {
			out[i+1] = Redacted
			i++
		}
	}
	return out
}

package driver

// smallDistinct is the most ids Distinct compares pairwise: below it,
// comparing every pair costs less than a map, and allocates nothing.
const smallDistinct = 64

// Distinct returns ids without repeats, each at its first place. A batch
// read usually repeats none: then, for up to smallDistinct ids, it returns
// ids itself, allocating nothing, so the caller must not change either
// slice afterwards.
func Distinct(ids []string) []string {
	if len(ids) <= smallDistinct && !repeatsPairwise(ids) {
		return ids
	}
	seen := make(map[string]struct{}, len(ids))
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if _, dup := seen[id]; !dup {
			seen[id] = struct{}{}
			out = append(out, id)
		}
	}
	return out
}

// repeatsPairwise reports whether an id appears twice in ids, comparing
// every pair.
func repeatsPairwise(ids []string) bool {
	for i := 1; i < len(ids); i++ {
		for _, earlier := range ids[:i] {
			if ids[i] == earlier {
				return true
			}
		}
	}
	return false
}

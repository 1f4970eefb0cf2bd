package verify

import (
	"math/rand/v2"
	"slices"
)

// RandomFaults is the schedule of faults drawn at random, from the run's
// seed, rather than listed: each fault is any of FaultNames, and one in
// three is an instance's fault together with the cluster's (a+b). A long
// run so meets orders and pairs that nobody wrote down, and a seed that
// finds a violation finds it again.
const RandomFaults = "random"

// drawFault draws the next fault of a random schedule.
func drawFault(rng *rand.Rand) string {
	if rng.IntN(3) == 0 {
		var cluster []string
		for _, f := range FaultNames() {
			if !slices.Contains(instanceFaults, f) {
				cluster = append(cluster, f)
			}
		}
		return instanceFaults[rng.IntN(len(instanceFaults))] + "+" + cluster[rng.IntN(len(cluster))]
	}
	names := FaultNames()
	return names[rng.IntN(len(names))]
}

// scheduled is the faults a schedule may inject: every one for a random
// schedule, else the schedule's own.
func scheduled(faults []string) []string {
	if slices.Contains(faults, RandomFaults) {
		return FaultNames()
	}
	return faults
}

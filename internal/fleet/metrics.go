package fleet

// Metrics hears what a member does, for its instance's metrics (the
// composition root wires Prometheus; nil hears nothing). An interface
// rather than Prometheus itself: the booking domain depends on this
// package and must stay free of transport code.
type Metrics interface {
	// Owned is how many partitions the member holds now.
	Owned(n int)
	// Members is how many live members it saw at its last rebalance.
	Members(n int)
	// Changed counts a lease acquired, released (handed back) or lost.
	Changed(change string)
	// Failed counts lease operations that failed: renew (a batch), acquire.
	Failed(op string, n int)
}

type noMetrics struct{}

func (noMetrics) Owned(int)          {}
func (noMetrics) Members(int)        {}
func (noMetrics) Changed(string)     {}
func (noMetrics) Failed(string, int) {}

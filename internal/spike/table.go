package spike

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable prints the storm-window totals of each run and the summary
// against the baseline, for a terminal.
func WriteTable(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\twhere\trequested\tadmitted\trejected\twould reject\tfail open\tfailed (503)\tgot a driver\tunallocated\tsuccess\tp50 ms\tp99 ms\tto driver p99 ms\tfailed in p99 ms\t")
	for _, run := range r.Runs {
		for _, side := range []struct {
			name string
			c    Counts
		}{{"outside", run.Outside}, {"inside", run.Inside}} {
			c := side.c
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.1f%%\t%.1f\t%.1f\t%.0f\t%.0f\t\n", run.Name, side.name,
				c.Requested, c.Admitted, c.Rejected, c.WouldReject, c.FailOpen, c.Failed, c.Allocated, c.Unallocated,
				100*c.Success(), c.LatencyP50, c.LatencyP99, c.AllocP99, c.FailedP99)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, run := range r.Runs {
		if c := run.Crash; c != nil {
			fmt.Fprintf(w, "\ninstance-crash: instance %d of %d crashed at %.0fs (lease %.0fs) holding %d partitions, restarted at %.0fs\n",
				r.Settings.Instances, r.Settings.Instances, c.AtS, c.LeaseS, c.Partitions, c.RestartS)
			fmt.Fprintf(w, "  its open bookings: %d, worked again: %d; due or claimed by the lease's end: %d, worked again at most %.1fs after the crash; late (over 1 s past due or the lease's end): %d\n",
				c.Open, c.Reclaimed, c.DueByLease, c.MaxAfterS, c.Late)
			fmt.Fprintf(w, "  admitted bookings of the run still searching past their deadline at its end: %d\n", c.Overdue)
		}
	}
	if len(r.Summary) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\noutside the hotspot, during the storm, against the no-spike baseline")
	fmt.Fprintln(w, "(settled: once the storm's first allocation timeout has passed):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tsuccess\tvs baseline\tbooking p99 ms\tvs baseline\twithin 5%\tsettled: p99 ms\tvs baseline\twithin 5%\tfirst trip in the storm\tRedis cmds\t")
	for _, l := range r.Summary {
		first := "none"
		if ft := l.FirstTripAfter; ft >= 0 {
			first = fmt.Sprintf("%.1fs", ft.Seconds())
		}
		fmt.Fprintf(tw, "%s\t%.2f%%\t%+.1f%%\t%.1f\t%+.1f%%\t%v\t%.1f\t%+.1f%%\t%v\t%s\t%d\t\n", l.Run, 100*l.OutsideSuccess, 100*l.SuccessVsBase,
			l.OutsideP99, 100*l.P99VsBase, yesNo(l.Within5Pct), l.SettledP99, 100*l.SettledP99VsBase, yesNo(l.SettledWithin5Pct), first, l.RedisCmds)
	}
	return tw.Flush()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

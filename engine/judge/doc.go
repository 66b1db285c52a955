// Package judge decides whether a run's timing holds on the real clock: each run derives its
// tolerance from the metrics its own checks read (Reads, Judge), its timers record how late
// they fired (Timers), and Assess marks a run noisy when a source was later than its limit.
// It also judges compare checks and expect checks against the CPU other processes took
// (CompareFlip, ExpectCPUFlip), the metrics of timers no source watches, a real server's
// own idle close and a paced accept loop's counts, over how far that CPU could have moved
// them (TimerRanges, ServerTimerLate), and says at load time which checks cannot be judged
// at a time scale (Unjudgeable).
package judge

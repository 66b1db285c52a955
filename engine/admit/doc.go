// Package admit decides when a run may start: the file-descriptor budget its connections
// need (HoldOf, Budget) and, for a run on the real clock, whether the machine has the
// headroom its timing tolerance asks for (Admission, WaitHeadroom).
package admit

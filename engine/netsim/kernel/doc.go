// Package kernel holds what netsim asks of the kernel below Go's net and time packages:
// a timerfd for the precise clock, the receive stamps (SO_TIMESTAMPNS) and the bytes
// left after a read (TCP_INQ) on the relay's reads, one non-blocking write, a socket's
// pending error, a peek for a queued FIN, a listener with a chosen backlog, an epoll set
// that holds idle readers without goroutines (Parker), and the open-file limit.
//
// Each has a fallback where the platform lacks it (the *_other.go files), and
// PortableEnv makes Linux use the fallbacks too, to measure what other platforms get.
package kernel

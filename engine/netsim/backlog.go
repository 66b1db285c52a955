package netsim

import "time"

// The listen queue at the proxy's edge: Config.Backlog and Config.AcceptDelay.
//
// The proxy stands where the server's listening socket would be, so it models the
// server's accept queue: connections the kernel completed and the application has not
// accepted yet. The modelled server accepts one connection per AcceptDelay.
//
// With the default overflow (Linux's net.ipv4.tcp_abort_on_overflow=0) the queue is the
// kernel's own: the proxy listens with listen(2)'s backlog set to Backlog and accepts
// no faster than one connection per AcceptDelay. When the queue is full (Linux holds
// Backlog+1: sk_acceptq_is_full in include/net/sock.h) the kernel drops the SYN
// (tcp_conn_request: LINUX_MIB_LISTENOVERFLOWS, goto drop) and the client's kernel
// retransmits it after its initial RTO of 1 s (TCP_TIMEOUT_INIT, RFC 6298 section 2.1)
// and then at doubling intervals: 1 s, 3 s, 7 s, 15 s ... after the first SYN, up to
// net.ipv4.tcp_syn_retries (6, about 127 s) or the client's own connect timeout. None of
// that is simulated: the drops and the retries are the real kernels' on loopback, which
// is why this mode exists only where listen(2) can be given a backlog (Unix). The
// modelled RTT of the handshake is counted from the moment the proxy accepts, so a
// connection that waited in the queue pays it after leaving the queue.
//
// With RefuseOverflow (Linux's tcp_abort_on_overflow=1, a system-wide sysctl kalab cannot
// set per socket) the queue is modelled instead: the proxy accepts every connection at
// once, gives each the time the modelled server would accept it, and answers one that
// finds Backlog+1 connections still waiting with a reset one RTT after it connected.
// Linux sends that reset in answer to the handshake's last ACK, so the client's connect
// succeeds and its first read or write fails with ECONNRESET, as here.

// admit returns when the modelled server accepts a connection the proxy accepted at now,
// and whether the modelled queue overflowed. Only acceptLoop calls it.
func (p *Proxy) admit(now time.Time) (time.Time, bool) {
	if !p.cfg.RefuseOverflow || p.cfg.AcceptDelay <= 0 {
		return now, false
	}
	if p.queue.Full(now) {
		return now, true
	}
	return p.queue.Enter(now), false
}

// acceptPause waits AcceptDelay after an accept when the kernel's queue is the model
// (the default overflow), so connections wait there. It returns false when the proxy
// is closing.
func (p *Proxy) acceptPause() bool {
	if p.cfg.AcceptDelay <= 0 || p.cfg.RefuseOverflow {
		return true
	}
	t := time.NewTimer(p.cfg.AcceptDelay)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.ctx.Done():
		return false
	}
}

package main

// clocksHelp is `kalab help clocks`.
const clocksHelp = `Two clocks run kalab's runs.

virtual  Every part of the run is kalab's own code or Go's: the model client or Go's
         Transport, the embedded server, the links, the balancer, the middlebox. They run
         inside Go's testing/synctest bubble over an in-memory network that carries the
         link's model (delay per direction, handshake, FIN and reset behind the data,
         jitter drawn from the seed, slow start, bandwidth, the listen queue, the kernel's
         TCP keepalive probes). Time is simulated: it moves only when every part waits, so
         a run is exact, gives the same figures on any machine at any load (save what
         hangs on the order Go runs goroutines that wake at one instant), and takes only
         the CPU its code needs (file 04's 1,000 requests over 6 minutes of model time run
         in well under a second). No run is noisy, none is rerun, and time_scale is not
         applied.
real     Loopback sockets in real time, for what only real time can show: real client
         programs (client.exec), real servers (server.exec, command, url), the caller's
         own Go client (kalabtest), and the files that say clock: real because their
         finding is CPU or the kernel's own race (09, 14). The timing judge decides
         whether the machine held each run's timing.

A run goes virtual unless the file or --clock says otherwise, or a part of it needs
real time; its record says which clock ran it ("clock"), and a note says why a run that
could not go virtual ran real. clock: virtual on a run that cannot have it is refused
(the run is an engine error naming the part).

What the virtual clock cannot see: CPU time is free there (a TLS handshake, a response's
processing and a burst's accept loop take 0 ms unless the scenario models them, as
server.response.delay and server.accept_delay do), and the kernel's own counters are
not read (time_wait counts the closes that leave TIME_WAIT behind instead of reading the
kernel's table). A finding that depends on them needs the real clock: --clock real.

  kalab run scenarios --clock real      every run that can on the real clock
  kalab run file.yaml --clock virtual   every run that can on the virtual clock
`

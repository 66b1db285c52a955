package netsim

import "os"

// PortableEnv names the environment variable that, set to 1, makes netsim
// use on Linux only what it has on every platform: no timerfd for the
// shared clock and no kernel receive timestamps, so chunks are stamped
// when the reader runs. It exists to measure, on Linux, the precision
// macOS and Windows get (doc.go has the figures); it is read once, at
// start-up.
const PortableEnv = "KALAB_NETSIM_PORTABLE"

// portable is true when PortableEnv asks for the portable fallbacks, or
// always where the platform has nothing better.
var portable = os.Getenv(PortableEnv) == "1"

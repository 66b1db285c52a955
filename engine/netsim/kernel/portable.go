package kernel

import "os"

// PortableEnv names the environment variable that, set to 1, makes netsim
// use on Linux only what it has on every platform: no timerfd for the
// shared clock and no kernel receive timestamps, so chunks are stamped
// when the reader runs. It exists to measure, on Linux, the precision
// macOS and Windows get (netsim's doc.go has the figures); it is read once,
// at start-up.
const PortableEnv = "KALAB_NETSIM_PORTABLE"

// Portable is true when PortableEnv asks for the portable fallbacks. The
// functions of this package then give what they give where the platform has
// nothing better: no timerfd, no receive stamps, no TCP_INQ, no idle parker.
var Portable = os.Getenv(PortableEnv) == "1"

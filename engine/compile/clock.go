package compile

import (
	"fmt"
	"strings"

	"github.com/kalab-dev/kalab/engine/configure"
	"github.com/kalab-dev/kalab/engine/scenario"
)

// A run goes on one of two clocks. On the virtual clock every hop is kalab's own code or
// Go's (the model client or Go's Transport, the embedded server, the links, the balancer)
// over an in-memory network (engine/vnet) inside a synctest bubble: time is simulated, so
// the run is exact, identical on every machine, and takes only the CPU its code needs. On
// the real clock the hops talk over loopback sockets in real time, as real programs need,
// and the timing judge decides whether the machine held the run's timing.

// clockChoice is a run's clock and, when it runs real although virtual was asked for or
// would be the default, why.
type clockChoice struct {
	clock string // scenario.ClockVirtual or scenario.ClockReal
	// offModel names the parts of the run the virtual clock does not model; empty when
	// every hop is modelled.
	offModel []string
	// refused is set when the file asked for the virtual clock and the run cannot have it.
	refused string
}

// chooseClock resolves a run's clock: the invocation's --clock, else the file's clock,
// else virtual when every hop of the run is one kalab models and this process can host a
// virtual clock, real otherwise. A --clock virtual that a run cannot follow (a real
// program) runs it real with a note; a file that asks for virtual and cannot have it is
// refused.
func chooseClock(st scenario.Settings, opt Options) clockChoice {
	off := offModel(st, opt)
	want := st.Clock
	fromFlag := opt.Clock != ""
	if fromFlag {
		want = opt.Clock
	}
	switch {
	case want == scenario.ClockReal:
		return clockChoice{clock: scenario.ClockReal, offModel: off}
	case len(off) == 0 && opt.Virtual:
		return clockChoice{clock: scenario.ClockVirtual}
	case want == scenario.ClockVirtual && !fromFlag:
		why := strings.Join(off, "; ")
		if len(off) == 0 {
			why = "this process has no virtual clock (a Go test without a vclock host)"
		}
		return clockChoice{clock: scenario.ClockReal, offModel: off,
			refused: "clock: virtual, but the run cannot run on the virtual clock: " + why}
	}
	return clockChoice{clock: scenario.ClockReal, offModel: off}
}

// offModel lists what keeps a run off the virtual clock: real programs, the caller's own
// client, and the parts the in-memory network does not model yet.
func offModel(st scenario.Settings, opt Options) []string {
	var off []string
	if st.Client.Exec != nil {
		off = append(off, "client.exec runs a real program")
	}
	if opt.CallerClient && opt.CallerRealClock {
		off = append(off, "the caller's own Go client (go-func) asked for the real clock")
	}
	if st.Server.Real() {
		off = append(off, "server."+string(configure.RealKind(st.Server))+" is a real program or address")
	}
	for i, b := range st.Balancers() {
		if b.Real() {
			off = append(off, scenario.BalancerPath(i, len(st.Balancers()))+".exec runs the real "+b.Exec)
		}
	}
	if opt.TestHops {
		off = append(off, "a test's own hop")
	}
	return off
}

// clockNote is the run record's note on its clock, or "".
func (c clockChoice) note(fileScale float64) string {
	switch {
	case c.clock == scenario.ClockVirtual && fileScale != 1 && fileScale != 0:
		return fmt.Sprintf("virtual clock: time_scale %g not applied (simulated time needs no compression)", fileScale)
	case c.clock == scenario.ClockReal && len(c.offModel) > 0:
		return "real clock: " + strings.Join(c.offModel, "; ")
	}
	return ""
}

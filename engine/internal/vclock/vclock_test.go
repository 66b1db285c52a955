package vclock_test

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/vclock"
)

func TestRunSleepsVirtualHour(t *testing.T) {
	h := vclock.FromTest(t)
	if !h.Available() {
		t.Fatal("FromTest host not available")
	}
	var elapsed time.Duration
	start := time.Now()
	err := h.Run("sleep an hour", func() {
		t0 := time.Now()
		time.Sleep(time.Hour)
		elapsed = time.Since(t0)
	})
	real := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if elapsed != time.Hour {
		t.Errorf("virtual elapsed = %v, want exactly 1h", elapsed)
	}
	if real >= time.Second {
		t.Errorf("a virtual hour took %v of real time, want < 1s", real)
	}
}

func TestNilHostNotAvailable(t *testing.T) {
	var h *vclock.Host
	if h.Available() {
		t.Error("nil host reports Available")
	}
	if err := h.Run("x", func() {}); err == nil {
		t.Error("Run on nil host returned nil")
	}
	if (&vclock.Host{}).Available() {
		t.Error("zero host reports Available")
	}
}

func TestConcurrentRuns(t *testing.T) {
	h := vclock.FromTest(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	got := make([]time.Duration, n)
	for i := range n {
		wg.Go(func() {
			errs[i] = h.Run(fmt.Sprintf("run %d", i), func() {
				t0 := time.Now()
				// A few goroutines per bubble, each sleeping its own share.
				var inner sync.WaitGroup
				for j := range 3 {
					inner.Go(func() { time.Sleep(time.Duration(i+1) * time.Duration(j+1) * time.Minute) })
				}
				inner.Wait()
				got[i] = time.Since(t0)
			})
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("run %d: %v", i, errs[i])
		}
		if want := time.Duration(i+1) * 3 * time.Minute; got[i] != want {
			t.Errorf("run %d: virtual elapsed %v, want %v", i, got[i], want)
		}
	}
}

func TestRunInsideBubbleRefused(t *testing.T) {
	h := vclock.FromTest(t)
	var inner error
	if err := h.Run("outer", func() { inner = h.Run("inner", func() {}) }); err != nil {
		t.Fatal(err)
	}
	if inner == nil || !strings.Contains(inner.Error(), "inside a bubble") {
		t.Errorf("nested Run: %v, want an error about running inside a bubble", inner)
	}
}

func TestPanicBecomesError(t *testing.T) {
	h := vclock.FromTest(t)
	err := h.Run("panics", func() { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "panics") {
		t.Fatalf("Run = %v, want an error naming the run and the panic", err)
	}
}

func TestStallOnRealSocket(t *testing.T) {
	h := vclock.FromTest(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var progress atomic.Int64
	const stall = 500 * time.Millisecond
	start := time.Now()
	err = h.Run("accept on loopback", func() {
		progress.Add(1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			c, err := ln.Accept()
			if err == nil {
				c.Close()
			}
		}()
		<-done
	}, vclock.Progress(&progress), vclock.StallAfter(stall))
	took := time.Since(start)
	ln.Close()

	var se *vclock.StallError
	if !errors.As(err, &se) {
		t.Fatalf("Run = %v, want a *StallError", err)
	}
	// Closing the listener releases Accept; the bubble then ends.
	select {
	case <-se.Done():
	case <-time.After(10 * time.Second):
		t.Error("bubble did not end after the listener was closed")
	}
	if took < stall || took > stall+2*time.Second {
		t.Errorf("stall reported after %v, want between %v and %v", took, stall, stall+2*time.Second)
	}
	if se.Name != "accept_on_loopback" || se.After != stall || se.Limit {
		t.Errorf("StallError = %+v", se)
	}
	msg := se.Error()
	if !strings.Contains(msg, "net.(*TCPListener).Accept") || !strings.Contains(msg, "IO wait") {
		t.Errorf("StallError does not name the Accept in IO wait: %s", msg)
	}
	if !strings.HasPrefix(msg, "the virtual clock stopped in accept_on_loopback: no progress for 500ms; blocked outside the model: goroutine ") {
		t.Errorf("unexpected message: %s", msg)
	}
	if len(se.Blocked) != 1 {
		t.Errorf("Blocked = %q, want only the goroutine in Accept (durably blocked ones excluded)", se.Blocked)
	}
	t.Log(msg)
}

func TestProgressKeepsRunAlive(t *testing.T) {
	h := vclock.FromTest(t)
	// The bubble waits on a channel made outside it, fed in real time: the
	// clock stops for each wait, but every tick is progress. The run lasts
	// longer than the stall limit without stalling.
	ticks := make(chan struct{})
	go func() {
		for range 20 {
			time.Sleep(20 * time.Millisecond)
			ticks <- struct{}{}
		}
	}()
	var progress atomic.Int64
	start := time.Now()
	err := h.Run("fed", func() {
		for range 20 {
			<-ticks
			progress.Add(1)
		}
	}, vclock.Progress(&progress), vclock.StallAfter(150*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("run took %v, want longer than the stall limit", took)
	}
}

func TestLimitWithoutProgress(t *testing.T) {
	h := vclock.FromTest(t)
	var mu sync.Mutex
	mu.Lock() // held outside the bubble: a non-durable block inside it
	start := time.Now()
	err := h.Run("mutex", func() {
		mu.Lock()
		//lint:ignore SA2001 the Lock above is the point: it blocks on a mutex held outside the bubble
		mu.Unlock()
	}, vclock.Limit(300*time.Millisecond))
	took := time.Since(start)
	mu.Unlock()
	var se *vclock.StallError
	if !errors.As(err, &se) || !se.Limit {
		t.Fatalf("Run = %v, want a *StallError for the limit", err)
	}
	<-se.Done()
	if took > 2*time.Second {
		t.Errorf("limit reported after %v", took)
	}
	if !strings.Contains(se.Error(), "sync.Mutex.Lock") || !strings.Contains(se.Error(), "real-time limit of 300ms") {
		t.Errorf("message: %s", se.Error())
	}
}

func TestDeadlockBecomesError(t *testing.T) {
	h := vclock.FromTest(t)
	err := h.Run("deadlock", func() {
		ch := make(chan int)
		<-ch
	})
	var de *vclock.DeadlockError
	if !errors.As(err, &de) {
		t.Fatalf("Run = %v, want a *DeadlockError", err)
	}
	if !strings.Contains(de.Reason, "all goroutines in bubble are blocked") {
		t.Errorf("Reason = %q", de.Reason)
	}
	if !strings.Contains(err.Error(), "chan receive (durable)") || !strings.Contains(err.Error(), "TestDeadlockBecomesError") {
		t.Errorf("error does not name the blocked goroutine: %v", err)
	}
	t.Log(err)
}

func TestLeftoverGoroutineBecomesError(t *testing.T) {
	h := vclock.FromTest(t)
	err := h.Run("leftover", func() {
		ch := make(chan int)
		go func() { <-ch }()
	})
	var de *vclock.DeadlockError
	if !errors.As(err, &de) {
		t.Fatalf("Run = %v, want a *DeadlockError", err)
	}
	if !strings.Contains(de.Reason, "main bubble goroutine has exited but blocked goroutines remain") {
		t.Errorf("Reason = %q", de.Reason)
	}
	if len(de.Blocked) != 1 || !strings.Contains(de.Blocked[0], "chan receive (durable)") {
		t.Errorf("Blocked = %q", de.Blocked)
	}
}

func TestGoexitBecomesError(t *testing.T) {
	h := vclock.FromTest(t)
	err := h.Run("goexit", runtime.Goexit)
	if err == nil || !strings.Contains(err.Error(), "runtime.Goexit") {
		t.Fatalf("Run = %v, want an error about runtime.Goexit", err)
	}
}

func TestNamesSanitized(t *testing.T) {
	h := vclock.FromTest(t)
	if err := h.Run("a/b c\tδ#1", func() {}); err != nil {
		t.Fatal(err)
	}
}

// With OutsideAfter, a goroutine waiting on a real socket ends the run once the bubble has
// made no progress for that long, long before the stall limit.
func TestOutsideOnRealSocket(t *testing.T) {
	h := vclock.FromTest(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var progress atomic.Int64
	const outside = 200 * time.Millisecond
	start := time.Now()
	err = h.Run("accept", func() {
		progress.Add(1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if c, err := ln.Accept(); err == nil {
				c.Close()
			}
		}()
		time.Sleep(time.Second) // virtual: passes at once, and the bubble is not yet stuck
		<-done
	}, vclock.Progress(&progress), vclock.StallAfter(20*time.Second), vclock.OutsideAfter(outside))
	took := time.Since(start)
	ln.Close()
	var se *vclock.StallError
	if !errors.As(err, &se) || !se.Outside {
		t.Fatalf("Run = %v, want a *StallError with Outside", err)
	}
	<-se.Done()
	if took < outside || took > outside+time.Second {
		t.Errorf("reported after %v, want between %v and %v", took, outside, outside+time.Second)
	}
	if msg := se.Error(); !strings.Contains(msg, vclock.OutsideText) || !strings.Contains(msg, "net.(*TCPListener).Accept") {
		t.Errorf("message: %s", msg)
	}
}

// A bubble whose goroutines wait only durably is never reported as outside, however long
// it takes in real time.
func TestOutsideIgnoresDurableWaits(t *testing.T) {
	h := vclock.FromTest(t)
	var progress atomic.Int64
	release := make(chan struct{})
	time.AfterFunc(600*time.Millisecond, func() { close(release) })
	err := h.Run("mutex", func() {
		var mu sync.Mutex
		mu.Lock()
		go func() { <-release; mu.Unlock() }() // release is not the bubble's: not durable
		mu.Lock()
	}, vclock.Progress(&progress), vclock.StallAfter(10*time.Second), vclock.OutsideAfter(100*time.Millisecond))
	if err != nil {
		t.Fatalf("Run = %v, want nil: nothing waited on real I/O", err)
	}
}

// With OutsideChannels, a goroutine that keeps waiting on a channel made outside the bubble
// ends the run at the second look; without it (above) such a wait is left to the stall limit.
func TestOutsideChannels(t *testing.T) {
	h := vclock.FromTest(t)
	var progress atomic.Int64
	release := make(chan struct{})         // not the bubble's
	const outside = 300 * time.Millisecond // three of the watchdog's 100 ms ticks
	start := time.Now()
	err := h.Run("outside channel", func() {
		progress.Add(1)
		<-release
	}, vclock.Progress(&progress), vclock.StallAfter(10*time.Second), vclock.OutsideAfter(outside), vclock.OutsideChannels())
	took := time.Since(start)
	var se *vclock.StallError
	if !errors.As(err, &se) || !se.Outside {
		close(release)
		t.Fatalf("Run = %v, want a *StallError with Outside", err)
	}
	close(release)
	<-se.Done()
	if took < 2*outside || took > 2*outside+time.Second {
		t.Errorf("reported after %v, want from %v (two looks) to %v", took, 2*outside, 2*outside+time.Second)
	}
	if msg := se.Error(); !strings.Contains(msg, "[chan receive]") || !strings.Contains(msg, "TestOutsideChannels") {
		t.Errorf("message does not name the wait: %s", msg)
	}
}

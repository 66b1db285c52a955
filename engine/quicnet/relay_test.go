package quicnet

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kalab-dev/kalab/engine/internal/lag"
	"github.com/kalab-dev/kalab/engine/netsim/stage"
)

const ms = time.Millisecond

func TestDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &lag.Recorder{}
		g := newRig(t, Config{RTT: 40 * ms, Lag: rec})
		srv := g.sink(g.srv, echo)
		cli := g.sink(g.cli, nil)
		time.Sleep(5 * ms)
		g.send("a")
		time.Sleep(time.Second)
		synctest.Wait()
		s, c := srv.all(), cli.all()
		if len(s) != 1 || s[0].at != 25*ms || s[0].from == g.cli.LocalAddr().String() {
			t.Errorf("server got %+v, want one datagram at 25ms from the relay's flow socket", s)
		}
		if len(c) != 1 || c[0].at != 45*ms || c[0].data != "re:a" || c[0].from != g.r.Addr().String() {
			t.Errorf("client got %+v, want the answer at 45ms from the relay", c)
		}
		if sum := rec.Summary(); sum.N != 2 || sum.Max != 0 {
			t.Errorf("lag %+v, want two releases, none late", sum)
		}
		want := Stats{Flows: 1, DatagramsUp: 1, DatagramsDown: 1, BytesUp: 1, BytesDown: 4}
		if st := g.r.Stats(); st != want {
			t.Errorf("stats %+v, want %+v", st, want)
		}
	})
}

// jitterRun sends n datagrams 1ms apart through a link with jitter and returns when each
// reached the server.
func jitterRun(t *testing.T, seed int64, n int) []time.Duration {
	var at []time.Duration
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, Config{RTT: 20 * ms, Jitter: 10 * ms, Seed: seed})
		srv := g.sink(g.srv, nil)
		for i := range n {
			g.send(fmt.Sprint(i))
			time.Sleep(ms)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		for i, a := range srv.all() {
			if a.data != fmt.Sprint(i) {
				t.Fatalf("datagram %d is %q: reordered", i, a.data)
			}
			at = append(at, a.at)
		}
	})
	return at
}

func TestJitter(t *testing.T) {
	const n = 50
	a, b, other := jitterRun(t, 7, n), jitterRun(t, 7, n), jitterRun(t, 8, n)
	if len(a) != n || !slices.Equal(a, b) {
		t.Fatalf("the same seed gave\n%v\n%v", a, b)
	}
	if slices.Equal(a, other) {
		t.Error("another seed gave the same delays")
	}
	// Each datagram is due RTT/2 plus its draw after it left, never before the one
	// ahead of it; the draws are stage.Latency's for the seed, in order.
	lat := stage.NewLatency(20*ms, 10*ms, 7)
	var floor time.Duration
	held := 0
	for i, got := range a {
		due := time.Duration(i)*ms + lat.Next()
		if due < floor {
			due, held = floor, held+1
		}
		floor = due
		if got != due {
			t.Fatalf("datagram %d arrived at %v, want %v", i, got, due)
		}
	}
	if held == 0 {
		t.Error("no datagram was held behind the one ahead of it: the test does not exercise the order")
	}
}

func TestBandwidth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 8 Mbit/s: a 1000-byte datagram takes 1ms to serialize.
		g := newRig(t, Config{RTT: 10 * ms, Bandwidth: 8_000_000})
		srv := g.sink(g.srv, nil)
		for range 5 {
			g.sendFrom(g.cli, make([]byte, 1000))
		}
		time.Sleep(time.Second)
		synctest.Wait()
		var at []time.Duration
		for _, a := range srv.all() {
			at = append(at, a.at)
		}
		if want := []time.Duration{6 * ms, 7 * ms, 8 * ms, 9 * ms, 10 * ms}; !slices.Equal(at, want) {
			t.Errorf("arrivals %v, want %v: serialized one after another, then RTT/2", at, want)
		}
	})
}

// lossRun sends n datagrams through a lossy link and returns the ones that arrived.
func lossRun(t *testing.T, seed int64, n int) []string {
	var got []string
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, Config{RTT: 2 * ms, Loss: 0.25, Seed: seed})
		srv := g.sink(g.srv, nil)
		for i := range n {
			g.send(fmt.Sprint(i))
			time.Sleep(ms)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		for _, a := range srv.all() {
			got = append(got, a.data)
		}
		if st := g.r.Stats(); st.LostUp != int64(n-len(got)) || st.DatagramsUp != int64(n) {
			t.Errorf("stats %+v: %d of %d arrived", st, len(got), n)
		}
	})
	return got
}

func TestLoss(t *testing.T) {
	const n = 1000
	a, b := lossRun(t, 3, n), lossRun(t, 3, n)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed lost different datagrams")
	}
	if len(a) != 740 {
		t.Errorf("seed 3 kept %d of %d datagrams, want 740", len(a), n)
	}
	rng := rand.New(rand.NewPCG(3, lossStreamUp))
	var want []string
	for i := range n {
		if rng.Float64() >= 0.25 {
			want = append(want, fmt.Sprint(i))
		}
	}
	if !slices.Equal(a, want) {
		t.Error("the datagrams lost are not the seeded draws of the up stream")
	}
	if c := lossRun(t, 4, n); slices.Equal(a, c) {
		t.Error("another seed lost the same datagrams")
	}
}

func TestCloseMidFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		m := NewMemory()
		defer m.Close()
		srvSock := must(m.ListenPacket(serverAddr))
		g := &rig{t: t, m: m, srv: srvSock, start: time.Now()}
		srv := g.sink(srvSock, echo)
		r, err := Start(ctx, m, Config{Upstream: serverAddr, RTT: 100 * ms, ReplayFirstFlight: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		g.r = r
		for range 5 {
			c := must(m.ListenPacket("127.0.0.1:0"))
			g.sendFrom(c, longPacket(1, quicV1, 10))
		}
		time.Sleep(30 * ms)
		cancel() // the relay closes with its context, datagrams and a replay in flight
		time.Sleep(time.Second)
		synctest.Wait()
		if got := srv.all(); len(got) != 0 {
			t.Errorf("the server got %d datagrams after the relay closed", len(got))
		}
		if err := r.Close(); err != nil {
			t.Errorf("Close after the context closed it: %v", err)
		}
		if st := r.Stats(); st.Flows != 5 || st.Replays != 0 {
			t.Errorf("stats %+v", st)
		}
		// The bubble ends only if every goroutine of the relay has.
	})
}

func TestConfigRefused(t *testing.T) {
	m := NewMemory()
	defer m.Close()
	for _, cfg := range []Config{
		{},
		{Upstream: "192.0.2.1:443"},
		{Upstream: serverAddr, Listen: "0.0.0.0:0"},
		{Upstream: serverAddr, Loss: 1.5},
		{Upstream: serverAddr, RTT: -1},
		{Upstream: serverAddr, Bandwidth: -1},
		{Upstream: serverAddr, OnExpiry: "reset"},
	} {
		if r, err := Start(t.Context(), m, cfg); err == nil {
			_ = r.Close()
			t.Errorf("Start(%+v) accepted", cfg)
		}
	}
}

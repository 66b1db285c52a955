package netsim

import (
	"io"
	"net"
	"sync"
	"testing"
)

// relay is a stand-in proxy of the floor benchmark: its address and how to stop it.
type relay struct {
	addr  string
	close func()
}

// acceptPairs accepts on a fresh loopback listener and hands every accepted
// connection, with its dialled upstream, to pair, until the listener closes.
func acceptPairs(tb testing.TB, upstream string, pair func(down, up *net.TCPConn)) (net.Listener, *sync.WaitGroup) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", upstream)
			if err != nil {
				c.Close()
				continue
			}
			pair(c.(*net.TCPConn), u.(*net.TCPConn))
		}
	}()
	return ln, &wg
}

// startCopyRelay relays with io.Copy in each direction, two goroutines a connection.
func startCopyRelay(tb testing.TB, upstream string) relay {
	var mu sync.Mutex
	var open []net.Conn
	var copies sync.WaitGroup
	ln, acc := acceptPairs(tb, upstream, func(down, up *net.TCPConn) {
		mu.Lock()
		open = append(open, down, up)
		mu.Unlock()
		copies.Add(2)
		pipe := func(dst, src *net.TCPConn) {
			defer copies.Done()
			_, _ = io.Copy(dst, src)
			_ = dst.CloseWrite()
		}
		go pipe(up, down)
		go pipe(down, up)
	})
	return relay{addr: ln.Addr().String(), close: func() {
		ln.Close()
		acc.Wait()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		copies.Wait()
	}}
}

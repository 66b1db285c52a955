//go:build !linux

package netsim

// idleParker has no epoll here: idle readers stay goroutines, handed to
// fresh ones (readLoop).
type idleParker struct{}

func newIdleParker() *idleParker         { return nil }
func (*idleParker) park(*direction) bool { return false }
func (*idleParker) forget(*direction)    {}
func (*idleParker) run(p *Proxy)         { p.wg.Done() }
func (*idleParker) close()               {}

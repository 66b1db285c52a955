package client

import "errors"

// Retire makes the pool stop using every connection it has now, as a load balancer stops
// sending requests to a target it deregisters: an idle one leaves the pool at once, a busy
// one after its response, and neither carries another request nor counts against MaxConns
// from then on. Retiring closes nothing: a retired connection stays open until its peer
// closes it or the pool closes. Requests from now on go on connections dialled after it.
// A creation-order pool (Scheduling Creation) cannot retire.
func (p *Pool) Retire() error {
	if p.m.cfg.Scheduling == Creation {
		return errors.New("a creation-order pool cannot retire its connections")
	}
	p.m.mu.Lock()
	defer p.m.mu.Unlock()
	p.m.epoch.Add(1)
	idle := p.m.idle
	p.m.idle = nil
	for _, c := range idle {
		c.idle = false
		if c.timer != nil {
			c.timer.Stop()
		}
		p.m.keepRetired(c)
	}
	return nil
}

// keepRetired takes c, retired, out of the pool's count and keeps it open for Close.
// Caller holds m.mu.
func (m *model) keepRetired(c *pconn) {
	m.retired = append(m.retired, c)
	m.open--
	m.grantSlot()
}

package publish

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// A reload hands the running publisher over to the next run's instead of
// closing it first: while the next run starts, the old connection stays
// subscribed and keeps the commands it receives (Hold); once the new
// publisher has subscribed, the old one ends without saying "offline" and
// gives them up (Release), and the new one carries them out (Take). A
// command sent while posed reloads is carried out after the reload, not
// lost between two connections.

// maxHeld bounds the commands a held publisher keeps.
const maxHeld = 64

// handover is a publisher's state while held.
type handover struct {
	mu   sync.Mutex
	on   bool
	cmds []Command
	// busy is held while a command is carried out (runCommand).
	busy sync.Mutex
}

// hold keeps c if the publisher is held, and reports whether it did.
func (p *Publisher) hold(c Command) bool {
	h := &p.handover
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.on {
		return false
	}
	if len(h.cmds) >= maxHeld {
		p.CommandError(c.Name, fmt.Errorf("posed is reloading and holds %d commands already: refused, send it again", maxHeld))
		return true
	}
	h.cmds = append(h.cmds, c)
	return true
}

// Hold prepares the publisher for a reload's handover: from now on the
// commands it receives are kept, not carried out; it returns once the
// command being carried out, if any, is done (a set/detect OFF that
// arrived as the reload began is then in the state the run hands over,
// not carried out after it: #55) and what is queued is sent (the run's
// last state goes out before the next run's first).
func (p *Publisher) Hold(ctx context.Context) {
	p.handover.mu.Lock()
	p.handover.on = true
	p.handover.mu.Unlock()
	// Wait for the command in progress: taking busy is enough.
	p.handover.busy.Lock()
	//lint:ignore SA2001 the lock is taken only to wait for runCommand
	p.handover.busy.Unlock()
	p.flush(ctx)
}

// Release ends a held publisher and returns the commands it kept that
// arrived before since (those after it reached next, the next run's
// publisher, too). It says "offline" only if next publishes on other
// topics (a new device id or prefix): on the same ones next is online.
func (p *Publisher) Release(ctx context.Context, since time.Time, next *Publisher) []Command {
	if next == nil || next.base != p.base {
		p.Shutdown(ctx)
	} else {
		p.stopCommands(ctx)
		p.flush(ctx)
		p.stopLoops(ctx)
		p.client.Disconnect(250)
	}
	p.handover.mu.Lock()
	defer p.handover.mu.Unlock()
	var out []Command
	for _, c := range p.handover.cmds {
		if c.At.Before(since) {
			out = append(out, c)
		}
	}
	p.handover.cmds = nil
	return out
}

// Take carries out commands another publisher kept, in order, as if they
// had arrived here.
func (p *Publisher) Take(cmds []Command) {
	for _, c := range cmds {
		p.log.Info("command received during the reload", "command", c.Name)
		p.queueCommand(c)
	}
}

// Subscribed is closed once the command topics are first subscribed.
func (p *Publisher) Subscribed() <-chan struct{} { return p.subscribed }

// markSubscribed records the first subscription.
func (p *Publisher) markSubscribed() { p.subOnce.Do(func() { close(p.subscribed) }) }

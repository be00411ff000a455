package publish

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/edgepose/posed/message"
)

// A reload hands the running publisher over to the next run's instead of
// closing it first: while the next run starts, the old connection stays
// subscribed and keeps the commands it receives (Hold); once the new
// publisher has subscribed, it takes over (TakeOver): the old one ends
// without saying "offline" and gives up what it kept, and the new one
// carries it out. A command sent while posed reloads is carried out after
// the reload, once, not lost between two connections.
//
// Which commands are the old connection's alone is decided by a barrier,
// not by the clock: the new publisher sends a command of its own,
// set/handover with a fresh nonce, through the broker. The broker routes
// every command to the connections subscribed at that moment, in one
// order, and each connection delivers in that order (SetOrderMatters):
// the commands the old connection received before the barrier are the
// ones it must hand over, except those the new one also received before
// the barrier (sent after it subscribed), which it has carried out
// itself; those after the barrier reached the new one. (Before, the old
// connection's commands were cut at the time the new one subscribed: a
// command routed to the old connection alone but delivered late, on a
// loaded machine, was dropped as one the new connection had had: #55.)

// With mqtt.client_id the two connections cannot overlap: a broker lets
// one connection have an id, and the new one would push the old one off
// (and the old one's reconnection the new one). The session is persistent
// instead (clean session off): the old connection leaves first, with what
// it kept; the broker keeps the commands sent to the session from then on
// (QoS 1), and delivers them to the new connection as it takes the
// session over; the new publisher carries out the old one's first, then
// its own (takeOverSession). (Before, the old connection ended before the
// new run connected, and a command sent in between, about a quarter of a
// second as the run starts, was lost: #55.)

// releaseCommand is the marker that ends a hold in the command goroutine
// (dispatch): no command from the broker has this name, as a topic level
// holds no '/'.
const releaseCommand = "/release"

// maxHeld bounds the commands a held publisher keeps.
const maxHeld = 64

// handover is a publisher's state while held, and the barrier's.
type handover struct {
	mu   sync.Mutex
	on   bool
	cmds []Command
	// busy is held while a command is carried out (runCommand).
	busy sync.Mutex
	// The barrier awaited (expect): its nonce, closed when it passed,
	// and then cut: how many commands were kept before it (both
	// publishers of a handover are held then).
	nonce  string
	passed chan struct{}
	cut    int
	// arrived, where set (tests), is called as each command arrives,
	// before it is queued: a slow delivery, in order.
	arrived func()
	// beforeConnect, where set (tests), is called in a session's
	// handover once the old connection has left and before the new one
	// connects.
	beforeConnect func()
}

// barrierCommand is the name of the barrier's command (TakeOver).
const barrierCommand = "handover"

// barrierWait bounds how long TakeOver waits for the barrier to come back
// through the broker (one that does not let posed publish on its own
// command topics never returns it).
const barrierWait = 2 * time.Second

// expect makes the publisher wait for the barrier with nonce.
func (p *Publisher) expect(nonce string) <-chan struct{} {
	h := &p.handover
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nonce, h.passed, h.cut = nonce, make(chan struct{}), 0
	return h.passed
}

// pass records a barrier command: where it is the one awaited, what came
// before it. Any other (a stale nonce, or one sent by someone else) is
// ignored: the barrier is no command to carry out or refuse.
func (p *Publisher) pass(nonce string) {
	h := &p.handover
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.passed == nil || nonce != h.nonce {
		return
	}
	h.cut = len(h.cmds)
	close(h.passed)
	h.passed, h.nonce = nil, ""
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
	// The next run reads the events' spool and writes it from now on: the
	// held publisher writes it no more (an event it still sends is sent
	// again by the next run, under its own id).
	p.events.close()
}

// TakeOver ends prev, the last run's held publisher, once p (which must
// have started WithHeld(true)) has subscribed to the commands or ctx ends, and the barrier
// has come back (barrierWait at most); then carries out,
// in the order they were sent, the commands prev kept that p did not
// receive itself (the barrier, above) and those p kept, and returns how
// many of them were prev's. prev says "offline" only if p publishes on
// other topics (a new device id or prefix): on the same ones p is online.
func (p *Publisher) TakeOver(ctx context.Context, prev *Publisher) int {
	if p.gate != nil {
		if p.cfg.ClientID == prev.cfg.ClientID {
			return p.takeOverSession(ctx, prev)
		}
		close(p.gate) // another id: both connect, and the barrier decides
	}
	select {
	case <-p.subscribed:
	case <-ctx.Done():
	}
	since := time.Now()
	same := p.base == prev.base
	nonce := NewClientID("barrier")
	passed := []<-chan struct{}{prev.expect(nonce)}
	if same {
		passed = append(passed, p.expect(nonce))
	}
	p.enqueue(outMsg{topic: prev.base + message.TopicSet + barrierCommand, qos: 1, payload: []byte(nonce)})
	wait := time.NewTimer(barrierWait)
	defer wait.Stop()
	ok := true
	for _, c := range passed {
		if !ok {
			break
		}
		select {
		case <-c:
		case <-wait.C:
			ok = false
		}
	}
	end, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if !same {
		prev.Shutdown(end)
	} else {
		prev.stopCommands(end)
		prev.flush(end)
		prev.stopLoops(end)
		prev.client.Disconnect(250)
	}
	prev.handover.mu.Lock()
	kept, cut := prev.handover.cmds, prev.handover.cut
	prev.handover.cmds = nil
	prev.handover.mu.Unlock()
	overlap := 0
	if same {
		p.handover.mu.Lock()
		overlap = p.handover.cut
		p.handover.mu.Unlock()
	}
	var theirs []Command
	if ok && overlap <= cut {
		theirs = kept[:cut-overlap]
	} else {
		// The barrier did not come back: the clock decides, as well as it
		// can (a command routed to the old connection alone but delivered
		// to it after since is lost).
		p.log.Warn("mqtt: the reload's handover barrier did not come back through the broker: a command sent as the new run subscribed may be lost",
			"topic", prev.base+message.TopicSet+barrierCommand)
		for _, c := range kept {
			if c.At.Before(since) {
				theirs = append(theirs, c)
			}
		}
	}
	p.release(theirs)
	return len(theirs)
}

// takeOverSession is TakeOver where both publishers have the session of
// one client id (mqtt.client_id): prev leaves first, keeping the session
// at the broker, then p connects and takes it over, with the commands the
// broker kept for it meanwhile; p carries out everything prev kept, then
// those. It returns how many were prev's.
func (p *Publisher) takeOverSession(ctx context.Context, prev *Publisher) int {
	end, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if p.base == prev.base {
		// The connection first: no command reaches prev after its command
		// goroutine has stopped.
		prev.client.Disconnect(250)
		prev.stopCommands(end)
		prev.stopLoops(end)
	} else {
		// The session's subscription is the old device's: dropped, or the
		// broker would go on sending p the old topics' commands. prev says
		// offline on them.
		if t := prev.client.Unsubscribe(prev.base + message.TopicSet + "+"); !t.WaitTimeout(tokenWait) || t.Error() != nil {
			p.log.Warn("mqtt: cannot drop the old device's command topics from the session", "topic", prev.base+message.TopicSet+"+", "err", t.Error())
		}
		prev.Shutdown(end)
	}
	prev.handover.mu.Lock()
	kept := prev.handover.cmds
	prev.handover.cmds = nil
	prev.handover.mu.Unlock()
	if p.handover.beforeConnect != nil {
		p.handover.beforeConnect()
	}
	close(p.gate)
	select {
	case <-p.subscribed:
	case <-ctx.Done():
	}
	p.release(kept)
	return len(kept)
}

// release ends p's hold: the command goroutine carries out theirs (the
// last run's), then what p kept, then what comes after, in that order.
func (p *Publisher) release(theirs []Command) {
	for _, c := range theirs {
		p.log.Info("command received during the reload", "command", c.Name)
	}
	h := &p.handover
	h.mu.Lock()
	h.cmds = append(theirs[:len(theirs):len(theirs)], h.cmds...)
	if p.cmdQueue == nil { // no command goroutine: nothing to carry out
		h.cmds, h.on = nil, false
	}
	h.mu.Unlock()
	if p.cmdQueue == nil {
		return
	}
	select {
	case p.cmdQueue <- Command{Name: releaseCommand}:
	case <-p.cmdDone:
	}
}

// markSubscribed records the first subscription.
func (p *Publisher) markSubscribed() { p.subOnce.Do(func() { close(p.subscribed) }) }

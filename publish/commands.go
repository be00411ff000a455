package publish

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgepose/posed/message"
)

// CommandHandler carries out a command (name is what follows set/ in the
// topic) and says what to send back. It runs in the publisher's command
// goroutine, one command at a time; an error is published on the error
// topic and logged, and must mean that nothing was changed.
type CommandHandler func(name string, payload []byte) (message.Reply, error)

// maxCommandPayload bounds a command's payload: commands are words.
const maxCommandPayload = 1024

// Command is a command received: carried out in order on the publisher's
// command goroutine, or kept while the publisher is held for a reload's
// handover (Hold, Release, Take).
type Command struct {
	Name    string
	Payload []byte
	At      time.Time // when it arrived
}

// subscribeCommands subscribes to the command topics (on connect).
func (p *Publisher) subscribeCommands(c mqtt.Client) {
	t := c.Subscribe(p.base+message.TopicSet+"+", 1, p.onCommand)
	go func() {
		if !t.WaitTimeout(tokenWait) || t.Error() != nil {
			p.log.Warn("mqtt: cannot subscribe to the command topics", "topic", p.base+message.TopicSet+"+", "err", t.Error())
			return
		}
		p.markSubscribed()
	}()
}

// onCommand receives a command from the broker. With a persistent session
// (mqtt.client_id) it is also the route of the command topics from before
// the first connection: the commands the broker kept for the session come
// at once after it accepts the connection, before any subscription.
func (p *Publisher) onCommand(_ mqtt.Client, m mqtt.Message) {
	name := strings.TrimPrefix(m.Topic(), p.base+message.TopicSet)
	if n, ok := oversizedSize(m.Payload()); ok || len(m.Payload()) > maxCommandPayload {
		// Refused here, before it is copied or queued (and one over
		// maxInbound was never held at all: see limitConn).
		if !ok {
			n = len(m.Payload())
		}
		p.CommandError(name, fmt.Errorf("payload of %d bytes refused: commands take at most %d", n, maxCommandPayload))
		return
	}
	if m.Retained() {
		// A command is an action, not a state: one left retained on
		// the broker would be carried out again at every
		// (re)subscription — a retained reload restarted posed
		// forever. Refused, with how to clear it.
		p.CommandError(name, fmt.Errorf("retained command ignored (commands are actions: publish them without the retain flag); clear it with: mosquitto_pub -r -n -t %s", m.Topic()))
		return
	}
	if p.handover.arrived != nil {
		p.handover.arrived()
	}
	p.queueCommand(Command{Name: name, Payload: append([]byte(nil), m.Payload()...), At: time.Now()})
}

// queueCommand hands a command to the command goroutine, or refuses it
// when too many wait.
func (p *Publisher) queueCommand(c Command) {
	select {
	case p.cmdQueue <- c:
	default:
		p.CommandError(c.Name, errors.New("too many commands at once: refused"))
	}
}

// runCommands carries out commands one at a time; told to stop, it carries
// out those already received, then returns.
func (p *Publisher) runCommands() {
	defer close(p.cmdDone)
	for {
		select {
		case <-p.cmdStop:
			for {
				select {
				case c := <-p.cmdQueue:
					p.dispatch(c)
				default:
					return
				}
			}
		case c := <-p.cmdQueue:
			p.dispatch(c)
		}
	}
}

// dispatch carries out c; the release marker (release) ends the hold and
// carries out what it kept first, in order: every command that arrives
// after the marker waits behind them.
func (p *Publisher) dispatch(c Command) {
	if c.Name != releaseCommand {
		p.runCommand(c)
		return
	}
	h := &p.handover
	h.mu.Lock()
	kept := h.cmds
	h.cmds, h.on = nil, false
	h.mu.Unlock()
	for _, k := range kept {
		p.runCommand(k)
	}
}

// runCommand carries out one command and reports how it went.
func (p *Publisher) runCommand(c Command) {
	// A command carried out holds busy until it is done: Hold waits for
	// it, so that the run's last word (its privacy switch) is what the
	// next run is handed.
	p.handover.busy.Lock()
	defer p.handover.busy.Unlock()
	if c.Name == barrierCommand {
		p.pass(string(c.Payload))
		return
	}
	if p.hold(c) { // a reload is handing the publisher over
		return
	}
	r, err := p.commands(c.Name, c.Payload)
	if err != nil {
		p.CommandError(c.Name, err)
		return
	}
	p.log.Info("command carried out", "command", c.Name)
	if r.Detect != nil {
		p.SetDetect(*r.Detect)
	}
	if r.Snapshot != nil {
		p.Snapshot(r.Snapshot)
	}
	if r.Warning != nil {
		p.CommandError(c.Name, r.Warning)
	}
}

// refusedLogged is how many refused commands a minute are logged one by
// one; beyond it a flood is summed up once the minute is over.
const refusedLogged = 10

// CommandError reports a refused command on the error topic and in the
// log (at most refusedLogged lines a minute: a flood of bad commands
// must not flood the log). A reply that cannot be sent is counted as
// dropped.
func (p *Publisher) CommandError(name string, err error) {
	p.refusedMu.Lock()
	now := time.Now()
	if now.Sub(p.refusedSince) >= time.Minute {
		if p.refusedQuiet > 0 {
			p.log.Warn("refused commands not logged one by one", "count", p.refusedQuiet, "since", p.refusedSince.Format(time.RFC3339))
		}
		p.refusedSince, p.refusedN, p.refusedQuiet = now, 0, 0
	}
	p.refusedN++
	loud := p.refusedN <= refusedLogged
	if !loud {
		p.refusedQuiet++
	}
	p.refusedMu.Unlock()
	if loud {
		p.log.Warn("command refused", "command", name, "err", err)
	}
	b, _ := json.Marshal(message.Error{Schema: message.SchemaVersion, Device: p.device, Command: name, Error: err.Error(), Time: now.UTC()})
	if !p.connected.Load() {
		p.drop(false)
		p.repliesDropped.Add(1)
	} else if !p.enqueue(outMsg{topic: p.base + message.TopicError, qos: 1, payload: b}) {
		p.repliesDropped.Add(1)
	}
}

// RepliesDropped counts the replies to commands that could not be sent
// (the queue full, or the broker away); the log says how many in its
// summary of refused commands.
func (p *Publisher) RepliesDropped() uint64 { return p.repliesDropped.Load() }

// Snapshot publishes an annotated JPEG on the snapshot topic (not
// retained: a picture of the past is no state).
func (p *Publisher) Snapshot(jpeg []byte) {
	if !p.connected.Load() {
		p.drop(false)
		return
	}
	p.enqueue(outMsg{topic: p.base + message.TopicSnapshot, qos: 1, payload: jpeg})
}

// SetDetect publishes (retained) whether detection is on.
func (p *Publisher) SetDetect(on bool) {
	v := "OFF"
	if on {
		v = "ON"
	}
	p.mu.Lock()
	p.retained[p.base+message.TopicDetect] = []byte(v)
	p.mu.Unlock()
	if p.connected.Load() {
		p.enqueue(outMsg{topic: p.base + message.TopicDetect, qos: 1, retained: true, payload: []byte(v)})
	}
}

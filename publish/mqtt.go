// Package publish is posed's transport: it sends the messages of
// message over MQTT (per-frame pose messages, a retained state and
// camera status, periodic statistics, events held across outages, and the
// availability topic with the last will) through a publishing goroutine
// that never blocks the frame loop, takes commands, announces Home
// Assistant's entities, and can run an embedded broker.
package publish

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgepose/posed/internal/clock"
	"github.com/edgepose/posed/internal/redact"
	"github.com/edgepose/posed/internal/regular"
	"github.com/edgepose/posed/message"
)

// Publisher owns the MQTT connection. Its methods never block: messages go
// through a bounded queue to a publishing goroutine, and pose messages are
// dropped (and counted) while the broker is unreachable, the queue is full
// or the rate cap says so.
type Publisher struct {
	cfg    Settings
	device string
	base   string // <prefix>/<device>/
	// Every frame's topics, made once.
	topicPose, topicPrimary string
	log                     *slog.Logger
	client                  mqtt.Client
	print                   io.Writer

	queue  chan outMsg
	events *eventHold // attention events until the broker has them (events.go)
	// repliesDropped: replies to commands not sent (RepliesDropped).
	repliesDropped atomic.Uint64
	lastQoS0       mqtt.Token    // the last QoS 0 message sent (the sending goroutine's)
	bufs           chan []byte   // message buffers paho is done with (Pose)
	lossless       bool          // Pose waits for room in the queue (WithLossless)
	tried          chan struct{} // closed once the first connection attempt has ended, either way (firstTryEnded)
	tryOnce        sync.Once
	wait           *time.Timer // the publishing goroutine's acknowledgement timer
	done           chan struct{}
	stopOnce       sync.Once
	wg             sync.WaitGroup

	mu       sync.Mutex
	retained map[string][]byte // topic → last retained payload, re-sent on reconnect
	// dirtyTopics are the retained topics changed while connected and not
	// yet sent; dirty (capacity 1) says there are some.
	dirtyTopics map[string]bool
	dirty       chan struct{}
	lastPose    time.Time
	// gone is a "faces gone" pose message, owed while owed is set (both
	// changed under mu; owed is read without it on the frame path): it is
	// sent by the publishing goroutine once the messages queued before it
	// have gone and the broker is there, unless a pose with faces comes
	// first and says more. owe (capacity 1) wakes the goroutine.
	gone      message.Pose
	owed      atomic.Bool
	owe       chan struct{}
	clock     clock.Clock   // times ha_interval and max_rate (WithClock)
	keepAlive time.Duration // WithKeepAlive

	// Home Assistant: what posed tells of itself, the discovery topics it
	// announces and those of earlier runs to clear, and the last message
	// on the HA topic.
	version, configURL, stateDir string
	announced, stale             []string
	discoverySaved               bool // stale cleared and announced recorded (under mu)
	commands                     CommandHandler
	attention                    *message.AttentionInfo // WithAttention
	cmdQueue                     chan Command
	cmdStop, cmdDone             chan struct{} // runCommands: told to stop, stopped
	cmdOnce                      sync.Once
	handover                     handover      // a reload's (handover.go)
	subscribed                   chan struct{} // closed at the first subscription to the commands
	subOnce                      sync.Once
	// With a persistent session (mqtt.client_id): gate, a reload's
	// publisher's, is closed when the last run's connection has left
	// (takeOverSession); clear, a start's, ends the session an earlier
	// process left (clearSession).
	gate       chan struct{}
	clear      *mqtt.ClientOptions
	lastHA     message.HA
	lastHATime time.Time // zero until the first HA message

	// published and dropped count every message; posePublished and
	// poseDropped the pose messages among them.
	published, dropped, reconnects atomic.Uint64
	posePublished, poseDropped     atomic.Uint64
	connected                      atomic.Bool
	everConnected                  atomic.Bool

	broker string // the broker URL, password redacted (for logs and status)
	// The last connection failure and when it was last logged, so that a
	// broker refusing every attempt is logged when its reason changes and
	// at most once a minute otherwise.
	refusedMu              sync.Mutex // CommandError's log limit
	refusedSince           time.Time
	refusedN, refusedQuiet int
	failMu                 sync.Mutex
	lastFail               string
	lastLogged             time.Time
	failures               uint64
}

// failLogEvery is how often an unchanged connection failure is logged again.
const failLogEvery = time.Minute

// Backoff of the first connection: from connectBackoff, doubling, up to
// connectBackoffMax (paho's own reconnects after a loss back off the same
// way up to 30 s).
const (
	connectBackoff    = time.Second
	connectBackoffMax = time.Minute
)

type outMsg struct {
	topic    string
	qos      byte
	retained bool
	pose     bool
	payload  []byte
	// pooled: payload comes from p.bufs and goes back once paho is done
	// with it (its token completed); otherwise the garbage collector has it.
	pooled bool
	after  func() // run by the publishing goroutine once m is sent
	// flush, if not nil, is no message: the publishing goroutine closes
	// it when it gets there, so everything queued before has been sent.
	flush chan struct{}
}

// queueLen bounds the messages waiting for the publishing goroutine (a
// connection's first burst — availability, retained messages, up to 13
// Home Assistant entries to announce or clear — fits with room for
// frames);
// frames' messages leave poseReserve of it to the rest (retained state,
// events), which a stream of poses waiting on QoS 1 acknowledgements
// would otherwise crowd out.
const (
	queueLen    = 32
	poseReserve = 4
)

// tokenWait bounds every wait on the broker.
const tokenWait = 5 * time.Second

// New connects to the broker in the background (retrying until it
// answers) and returns at once. print, if not nil, also receives every
// message as "topic payload" lines.
func New(cfg Settings, device string, log *slog.Logger, print io.Writer, opts ...Option) (*Publisher, error) {
	p := &Publisher{
		cfg: cfg, device: device, base: cfg.Prefix + "/" + device + "/", log: log, print: print,
		queue: make(chan outMsg, queueLen), done: make(chan struct{}), retained: map[string][]byte{},
		dirty: make(chan struct{}, 1), dirtyTopics: map[string]bool{}, tried: make(chan struct{}), owe: make(chan struct{}, 1),
		bufs:    make(chan []byte, 2*queueLen+4),
		version: "dev", clock: clock.Wall{}, keepAlive: 30 * time.Second,
	}
	p.topicPose, p.topicPrimary = p.base+message.TopicPose, p.base+message.TopicPrimary
	for _, o := range opts {
		o(p)
	}
	p.events = newEventHold(p.stateDir, device, log) // the events' spool in the state directory (an option)
	broker := strings.NewReplacer("mqtts://", "ssl://", "mqtt://", "tcp://", "tls://", "ssl://").Replace(cfg.Broker)
	id := cfg.ClientID
	if id == "" {
		id = NewClientID(device)
	}
	p.broker = redact.URL(broker)
	// A configured client id has a persistent session (handover.go): the
	// broker keeps its commands while no connection has the id (a
	// reload, a lost connection). A start clears what an earlier process
	// left there (clearSession); a reload's publisher connects once the
	// last run's has left (gate).
	session := cfg.ClientID != ""
	tc, err := TLSConfig(cfg)
	if err != nil {
		return nil, err
	}
	o := connOptions(broker, id, cfg, tc).
		SetCleanSession(!session).
		SetAutoReconnect(true).
		SetConnectRetry(false). // the first connection is retried by connectLoop, with backoff
		SetMaxReconnectInterval(30*time.Second).
		SetConnectionNotificationHandler(p.onNotification).
		SetKeepAlive(p.keepAlive).
		SetOrderMatters(true). // commands in the order sent (the handler never blocks); the handover's barrier needs it
		SetWill(p.base+message.TopicAvailable, "offline", 1, true).
		SetOnConnectHandler(p.onConnect).
		SetConnectionLostHandler(func(_ mqtt.Client, err error) {
			p.connected.Store(false)
			p.log.Warn("mqtt: connection lost", "broker", p.broker, "err", err)
		})
	p.announced = p.discovery()
	p.stale = p.staleDiscovery(p.announced)
	p.client = mqtt.NewClient(o)
	if session {
		if p.handover.on {
			p.gate = make(chan struct{})
		} else {
			// A connection that only ends the session an earlier
			// process left under id: clean, no will, no handlers.
			p.clear = connOptions(broker, id, cfg, tc).SetCleanSession(true).SetAutoReconnect(false).SetConnectRetry(false)
		}
		if p.commands != nil {
			p.client.AddRoute(p.base+message.TopicSet+"+", p.onCommand)
		}
	}
	// Everything the connection's handlers touch exists before it starts.
	p.subscribed = make(chan struct{})
	if p.commands != nil {
		p.cmdQueue = make(chan Command, 8)
		p.cmdStop, p.cmdDone = make(chan struct{}), make(chan struct{})
		go p.runCommands()
	}
	p.wg.Add(2)
	go p.connectLoop()
	go p.loop()
	return p, nil
}

// TLSConfig returns the TLS settings of cfg (nil without mqtt.ca and
// mqtt.cert), its files read and checked.
func TLSConfig(cfg Settings) (*tls.Config, error) {
	if cfg.CA == "" && cfg.Cert == "" {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CA != "" {
		pem, err := regular.ReadFile(cfg.CA)
		if err != nil {
			return nil, fmt.Errorf("publish: mqtt.ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("publish: mqtt.ca: %s holds no PEM certificate", cfg.CA)
		}
		tc.RootCAs = pool
	}
	if cfg.Cert != "" {
		c, err := loadKeyPair(cfg.Cert, cfg.Key)
		if err != nil {
			return nil, fmt.Errorf("publish: mqtt.cert/key: %w", err)
		}
		tc.Certificates = []tls.Certificate{c}
	}
	return tc, nil
}

// NewClientID draws the client id posed uses where mqtt.client_id is not
// set: posed-<device>- and 8 random hex digits.
func NewClientID(device string) string {
	var b [4]byte
	rand.Read(b[:])
	return ClientIDPrefix(device) + hex.EncodeToString(b[:])
}

// ClientIDPrefix is what every client id NewClientID draws starts with.
func ClientIDPrefix(device string) string { return "posed-" + device + "-" }

// loadKeyPair reads a client certificate and its key (regular files of at
// most regular.MaxSize each) into a key pair.
func loadKeyPair(cert, key string) (tls.Certificate, error) {
	c, err := regular.ReadFile(cert)
	if err != nil {
		return tls.Certificate{}, err
	}
	k, err := regular.ReadFile(key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(c, k)
}

// connOptions are what every connection of posed's to the broker has:
// the broker, the client id, the credentials and TLS, its timeouts, and
// the bound on inbound packets (packets over maxInbound are not held).
func connOptions(broker, id string, cfg Settings, tc *tls.Config) *mqtt.ClientOptions {
	o := mqtt.NewClientOptions().AddBroker(broker).SetClientID(id).
		SetConnectTimeout(cfg.ConnectTimeout).SetWriteTimeout(tokenWait).SetCustomOpenConnectionFn(openLimited)
	if cfg.Username != "" {
		o.SetUsername(cfg.Username)
	}
	if cfg.Password != "" {
		o.SetPassword(cfg.Password)
	}
	if tc != nil {
		o.SetTLSConfig(tc)
	}
	return o
}

// clearSession ends the persistent session an earlier process left at the
// broker (p.clear, set where there is one to end): commands sent while
// posed was not running are not carried out when it starts, as without a
// client id. It connects with a clean session, which discards the old
// one, and returns that connection still open: the persistent connection
// then takes its place under the same id (connectLoop). Leaving first
// raced the persistent connection at mochi-mqtt v2.7.9 (the embedded
// broker): a clean client's end that it handles after the next
// connection with its id has come deletes that connection's client, and
// nothing reached it (no command for 20 s in one CI run); a client taken
// over is never deleted so.
func (p *Publisher) clearSession() (mqtt.Client, error) {
	if p.clear == nil {
		return nil, nil
	}
	c := mqtt.NewClient(p.clear)
	t := c.Connect()
	select {
	case <-t.Done():
	case <-p.done:
		return nil, errors.New("publisher closed")
	}
	if t.Error() != nil {
		return nil, t.Error()
	}
	return c, nil
}

// connectLoop makes the first connection, retrying with exponential
// backoff until the broker accepts or the publisher closes; after that,
// paho's automatic reconnection takes over. A reload's publisher with a
// persistent session waits for the last run's to leave (gate).
func (p *Publisher) connectLoop() {
	defer p.wg.Done()
	if p.gate != nil {
		select {
		case <-p.gate:
		case <-p.done:
			return
		}
	}
	wait := connectBackoff
	for {
		clean, err := p.clearSession()
		if err == nil {
			t := p.client.Connect()
			stopped := false
			select {
			case <-t.Done():
			case <-p.done:
				stopped = true
			}
			if clean != nil {
				// Taken over by the persistent connection (the broker
				// closed it), or left now if that one failed.
				clean.Disconnect(0)
			}
			if stopped {
				return
			}
			if err = t.Error(); err == nil {
				p.clear = nil // the earlier session is gone
			}
		}
		if err == nil {
			return
		}
		select {
		case <-p.done:
			return
		default:
		}
		p.firstTryEnded()
		p.noteFailure(err, wait)
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-p.done:
			timer.Stop()
			return
		}
		wait = min(2*wait, connectBackoffMax)
	}
}

// onNotification logs paho's failed reconnections (the first connection's
// failures are logged by connectLoop, which knows its backoff).
func (p *Publisher) onNotification(_ mqtt.Client, n mqtt.ConnectionNotification) {
	if f, ok := n.(mqtt.ConnectionNotificationFailed); ok && p.everConnected.Load() {
		p.noteFailure(f.Reason, 0)
	}
}

// noteFailure records a failed connection attempt and logs it if its
// reason is new or the last log of it is a minute old.
func (p *Publisher) noteFailure(err error, retry time.Duration) {
	reason := err.Error()
	p.failMu.Lock()
	p.failures++
	n := p.failures
	log := reason != p.lastFail || time.Since(p.lastLogged) >= failLogEvery
	p.lastFail = reason
	if log {
		p.lastLogged = time.Now()
	}
	p.failMu.Unlock()
	if !log {
		return
	}
	args := []any{"broker", p.broker, "err", reason, "attempts", n}
	if retry > 0 {
		args = append(args, "retry", retry)
	}
	p.log.Warn("mqtt: cannot connect", args...)
}

// ConnectionError is the reason of the last failed connection attempt
// while not connected ("" when connected).
func (p *Publisher) ConnectionError() string {
	if p.connected.Load() {
		return ""
	}
	p.failMu.Lock()
	defer p.failMu.Unlock()
	return p.lastFail
}

// onConnect announces the device and re-sends the retained messages: a
// broker restarted without persistence has lost them.
func (p *Publisher) onConnect(c mqtt.Client) {
	if p.everConnected.Swap(true) {
		p.reconnects.Add(1)
	}
	p.connected.Store(true)
	p.failMu.Lock()
	after := p.failures
	p.failures, p.lastFail = 0, ""
	p.failMu.Unlock()
	p.log.Info("mqtt: connected", "broker", p.broker, "topic", p.base+message.TopicAvailable, "after_failures", after)
	if p.commands != nil {
		p.subscribeCommands(c)
	}
	p.mu.Lock()
	msgs := []outMsg{{topic: p.base + message.TopicAvailable, qos: 1, retained: true, payload: []byte("online")}}
	for t, b := range p.retained {
		msgs = append(msgs, outMsg{topic: t, qos: 1, retained: true, payload: b})
	}
	// Home Assistant entities that are no longer announced are removed
	// by empty retained configs, and the announced ones recorded, once:
	// after the first connection that sends them (the record is the
	// last message's after, so a message dropped on a full queue leaves
	// it to the next connection).
	for _, t := range p.stale {
		msgs = append(msgs, outMsg{topic: t, qos: 1, retained: true, payload: []byte{}})
	}
	if p.stale != nil || !p.discoverySaved {
		msgs[len(msgs)-1].after = func() {
			p.saveDiscovery()
			p.mu.Lock()
			p.stale, p.discoverySaved = nil, true
			p.mu.Unlock()
		}
	}
	p.mu.Unlock()
	// paho calls this in a goroutine of its own: it may wait for room in
	// the queue, so that no retained message is lost on a busy queue.
	for _, m := range msgs {
		select {
		case p.queue <- m:
		case <-p.done:
			return
		}
	}
	p.firstTryEnded() // "online" is queued before a replay's first frame
	p.wakeEvents()    // what waited while the broker was away
	p.wakeGone()      // faces gone while the broker was away
}

// firstTryEnded says the first connection attempt has ended: connected
// (and "online" queued) or failed. Later calls do nothing.
func (p *Publisher) firstTryEnded() { p.tryOnce.Do(func() { close(p.tried) }) }

// loop publishes queued messages, waiting (bounded) for QoS > 0 ones.
func (p *Publisher) loop() {
	defer p.wg.Done()
	for {
		select {
		case <-p.done:
			return
		case <-p.dirty:
			p.sendDirty()
			p.events.sync(time.Now()) // the state moves on: mark the time while events are open
		case <-p.events.ready:
			p.sendEvents()
		case <-p.owe:
			p.sendGone(false)
		case m := <-p.queue:
			// Retained changes go first: they are few, and what they
			// say (state, camera, attention) is what a subscriber sees
			// last and keeps.
			select {
			case <-p.dirty:
				p.sendDirty()
			default:
			}
			if m.flush != nil {
				p.sendEvents() // the events waiting go before "offline"
				// QoS 0 messages are not awaited as they go (send); paho
				// writes them in order, so the last one written means
				// every one before it is: wait for it, or a disconnect
				// (which paho sends ahead of them) drops what is left.
				p.sendGone(true) // what was queued before it has gone
				if p.lastQoS0 != nil {
					p.lastQoS0.WaitTimeout(tokenWait)
					p.lastQoS0 = nil
				}
				close(m.flush)
				continue
			}
			p.send(m)
			if m.after != nil {
				m.after()
			}
			if p.owed.Load() && len(p.queue) == 0 {
				p.sendGone(false)
			}
		}
	}
}

// sendDirty publishes the retained topics changed since the last call,
// each with its latest payload.
func (p *Publisher) sendDirty() {
	p.mu.Lock()
	msgs := make([]outMsg, 0, len(p.dirtyTopics))
	for t := range p.dirtyTopics {
		msgs = append(msgs, outMsg{topic: t, qos: 1, retained: true, payload: p.retained[t]})
	}
	clear(p.dirtyTopics)
	p.mu.Unlock()
	for _, m := range msgs {
		p.send(m)
	}
}

func (p *Publisher) send(m outMsg) {
	if !p.client.IsConnectionOpen() {
		p.drop(m.pose)
		if m.pooled {
			p.recycle(m.payload)
		}
		return
	}
	if p.print != nil {
		if len(m.payload) == 0 && m.retained {
			// An empty retained message clears the topic: for a discovery
			// topic, Home Assistant removes the entity.
			fmt.Fprintf(p.print, "%s (empty: clears the retained message; Home Assistant removes an entity posed no longer announces)\n", m.topic)
		} else {
			fmt.Fprintf(p.print, "%s %s\n", m.topic, m.payload)
		}
	}
	t := p.client.Publish(m.topic, m.qos, m.retained, m.payload)
	// QoS 0 is not waited for unless its buffer is to be reused: paho
	// reads the payload until the packet is written. A flush waits for
	// the last one.
	if m.qos == 0 {
		p.lastQoS0 = t
	}
	if m.qos > 0 || m.pooled {
		if !p.await(t, m) {
			return
		}
		if m.pooled {
			p.recycle(m.payload)
		}
		if err := t.Error(); err != nil {
			p.drop(m.pose)
			p.log.Warn("mqtt: publish failed", "topic", m.topic, "err", err)
			return
		}
	}
	p.published.Add(1)
	if m.pose {
		p.posePublished.Add(1)
	}
}

// await waits for t within tokenWait (on a timer reused from message to
// message) or until the publisher stops; a message not acknowledged is
// counted as dropped and its buffer left to paho.
func (p *Publisher) await(t mqtt.Token, m outMsg) bool {
	switch p.waitFor(t) {
	case acked:
		return true
	case timedOut:
		p.drop(m.pose)
		p.log.Warn("mqtt: publish not acknowledged in time", "topic", m.topic, "wait", tokenWait)
	default:
		p.drop(m.pose)
	}
	return false
}

// What waitFor saw of a token.
const (
	acked    = iota
	timedOut // tokenWait went by
	stopping // the publisher stops: its deadline, not tokenWait, bounds the wait
)

// waitFor waits for t within tokenWait (on a timer reused from message to
// message) or until the publisher stops.
func (p *Publisher) waitFor(t mqtt.Token) int {
	if p.wait == nil {
		p.wait = time.NewTimer(tokenWait)
	} else {
		p.wait.Reset(tokenWait)
	}
	select {
	case <-t.Done():
		p.wait.Stop()
		return acked
	case <-p.wait.C:
		return timedOut
	case <-p.done:
		p.wait.Stop()
		return stopping
	}
}

// drop counts a message that was not sent.
func (p *Publisher) drop(pose bool) {
	p.dropped.Add(1)
	if pose {
		p.poseDropped.Add(1)
	}
}

// enqueue hands m to the publishing goroutine, or drops it if the queue
// is full.
func (p *Publisher) enqueue(m outMsg) bool {
	select {
	case p.queue <- m:
		return true
	default:
		p.drop(m.pose)
		return false
	}
}

// Pose publishes a pose message, and the primary face's message beside
// it (primary: the index in m.Faces of the face that matters, -1 for
// none), unless the rate cap, the connection or a full queue says no. An
// empty message (faces gone) is never rate-capped, nor dropped for a full
// queue or a broker away: it is owed until it can go (oweGone), unless
// the faces come back first. m is read during the
// call only; nothing is allocated (the messages are encoded into buffers
// that come back once sent).
func (p *Publisher) Pose(m *message.Pose, primary int) {
	now := p.clock.Now()
	var prim *message.Face
	if primary >= 0 && primary < len(m.Faces) {
		prim = &m.Faces[primary]
	}
	p.haUpdate(len(m.Faces), prim, now)
	if p.cfg.MaxRate > 0 && len(m.Faces) > 0 {
		p.mu.Lock()
		if now.Sub(p.lastPose) < time.Duration(float64(time.Second)/p.cfg.MaxRate) {
			p.mu.Unlock()
			p.drop(true)
			return
		}
		p.lastPose = now
		p.mu.Unlock()
	}
	switch {
	case p.lossless:
		// A replay's first frames come before the connection: they wait
		// for its first attempt instead of being dropped as not
		// connected. Without a broker the attempt fails (within
		// mqtt.connect_timeout) and they are dropped as a camera's are.
		select {
		case <-p.tried:
		case <-p.done:
		}
	case len(m.Faces) == 0:
		p.oweGone(m)
		return
	case p.owed.Load():
		p.forgetGone()
	}
	if !p.connected.Load() {
		p.drop(true)
		return
	}
	pose := p.poseMsg(m)
	if !p.enqueuePose(pose) {
		p.recycle(pose.payload)
		return
	}
	if pm := p.primaryMsg(m, prim); !p.enqueuePose(pm) {
		p.recycle(pm.payload)
	}
}

// poseMsg encodes pose message m into a pooled buffer.
func (p *Publisher) poseMsg(m *message.Pose) outMsg {
	m.Schema, m.Device = message.SchemaVersion, p.device
	m.LatencyMs = float64(time.Since(m.Captured).Microseconds()) / 1000
	if m.Faces == nil {
		m.Faces = []message.Face{}
	}
	return outMsg{topic: p.topicPose, qos: byte(p.cfg.QoS), pose: true, payload: message.AppendPose(p.buffer(), m), pooled: true}
}

// primaryMsg encodes the primary message that goes beside pose message m
// (prim: its primary face, nil for none) into a pooled buffer.
func (p *Publisher) primaryMsg(m *message.Pose, prim *message.Face) outMsg {
	pm := message.Primary{Schema: message.SchemaVersion, Device: p.device, Seq: m.Seq, Captured: m.Captured, Face: prim}
	return outMsg{topic: p.topicPrimary, qos: byte(p.cfg.QoS), payload: message.AppendPrimary(p.buffer(), &pm), pooled: true}
}

// oweGone owes m, a pose message without faces: it is not dropped for a
// queue full of the poses before it, or for a broker away, as a frame's
// message is, since it is sent once, as the faces go, and a subscriber
// that misses it would keep the last faces for ever. It goes once the
// queue before it has gone (sendGone); a pose with faces that comes
// first says more, and it is then dropped (forgetGone). A camera's frames
// keep their order: owed, it has no pose with faces after it, and the
// poses queued before it go first.
func (p *Publisher) oweGone(m *message.Pose) {
	p.mu.Lock()
	if p.owed.Load() {
		p.drop(true) // the older of two: the newer says the same
		p.drop(false)
	}
	p.gone = message.Pose{Camera: m.Camera, Seq: m.Seq, Captured: m.Captured, Width: m.Width, Height: m.Height}
	p.owed.Store(true)
	p.mu.Unlock()
	p.wakeGone()
}

// forgetGone drops the faces gone owed, if it is still owed: a pose with
// faces is being published after it.
func (p *Publisher) forgetGone() {
	p.mu.Lock()
	if p.owed.Load() {
		p.owed.Store(false)
		p.drop(true)
		p.drop(false)
	}
	p.mu.Unlock()
}

// wakeGone tells the publishing goroutine to look at the faces gone owed.
func (p *Publisher) wakeGone() {
	select {
	case p.owe <- struct{}{}:
	default:
	}
}

// sendGone sends the faces gone owed, and the primary message without a
// face beside it, if the broker is there and, unless flushing, nothing
// queued before it waits. Run by the publishing goroutine only.
func (p *Publisher) sendGone(flushing bool) {
	if !p.owed.Load() || (!flushing && len(p.queue) > 0) || !p.client.IsConnectionOpen() {
		return
	}
	p.mu.Lock()
	if !p.owed.Load() {
		p.mu.Unlock()
		return
	}
	g := p.gone
	p.owed.Store(false)
	p.mu.Unlock()
	p.send(p.poseMsg(&g))
	p.send(p.primaryMsg(&g, nil))
}

// enqueuePose queues a frame's message: at once or dropped, or, lossless,
// when there is room (or dropped as the publisher stops).
func (p *Publisher) enqueuePose(m outMsg) bool {
	if !p.lossless {
		if len(p.queue) >= queueLen-poseReserve {
			p.drop(m.pose)
			return false
		}
		return p.enqueue(m)
	}
	select {
	case p.queue <- m:
		return true
	case <-p.done:
		p.drop(m.pose)
		return false
	}
}

// bufCap is the capacity of a pooled message buffer: a pose message of a
// few faces fits; a larger one grows its buffer, which then stays grown.
const bufCap = 2048

// buffer returns an empty buffer for a message, from the pool if one is
// there.
func (p *Publisher) buffer() []byte {
	select {
	case b := <-p.bufs:
		return b[:0]
	default:
		return make([]byte, 0, bufCap)
	}
}

// recycle puts a buffer paho no longer reads back in the pool.
func (p *Publisher) recycle(b []byte) {
	select {
	case p.bufs <- b:
	default:
	}
}

// NoFaces tells Home Assistant's topic that no face is seen (as posed
// stops, or its camera goes).
func (p *Publisher) NoFaces() { p.haUpdate(0, nil, p.clock.Now()) }

// Retain publishes a retained message (state, camera) and keeps it to
// re-send after a reconnect.
func (p *Publisher) Retain(topic string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		p.log.Error("publish: encoding", "topic", topic, "err", err)
		return
	}
	full := p.base + topic
	p.mu.Lock()
	p.retained[full] = b
	// While disconnected the message waits in p.retained: the connect
	// handler sends it. While connected the publishing goroutine sends
	// the latest payload of each changed topic before the queue's next
	// message: a retained message is never dropped for a full queue (it
	// would stay stale on the broker).
	if p.connected.Load() {
		p.dirtyTopics[full] = true
	}
	p.mu.Unlock()
	select {
	case p.dirty <- struct{}{}:
	default:
	}
}

// Event publishes a distraction or engagement event (QoS 1, not
// retained). An event that happens while the broker is away is dropped
// and counted: the retained attention topic says the state on reconnect.
func (p *Publisher) Event(e message.Event) {
	e.Schema, e.Device, e.EventType, e.ID = message.SchemaVersion, p.device, e.Kind+"_"+e.Phase, p.events.nextID()
	b, err := json.Marshal(e)
	if err != nil {
		p.log.Error("publish: encoding", "topic", message.TopicEvent, "err", err)
		return
	}
	dropped, warn := p.events.add(heldEvent{Key: fmt.Sprintf("%s/%d", e.Kind, e.Track), Start: e.Phase == "start", Payload: b})
	p.dropped.Add(uint64(dropped))
	if warn {
		p.log.Warn("mqtt: the broker has been away long enough that attention events are dropped, oldest first (with the end of any start dropped)",
			"held", maxHeldEvents, "events_dropped", p.events.dropped.Load())
	}
	p.wakeEvents()
}

// Stats publishes a statistics message (not retained).
func (p *Publisher) Stats(s message.Stats) {
	s.Schema, s.Device = message.SchemaVersion, p.device
	s.PosePublished, s.PoseDropped = p.posePublished.Load(), p.poseDropped.Load()
	s.Connected, s.Reconnects = p.connected.Load(), p.reconnects.Load()
	s.ConnectionError = p.ConnectionError()
	b, err := json.Marshal(s)
	if err != nil {
		return
	}
	p.enqueue(outMsg{topic: p.base + message.TopicStats, qos: 0, payload: b})
}

// Counters returns the messages of every kind published and dropped, and
// whether the broker is connected.
func (p *Publisher) Counters() (published, dropped uint64, connected bool) {
	return p.published.Load(), p.dropped.Load(), p.connected.Load()
}

// Shutdown sends what is queued, then "offline" (retained), and
// disconnects. It returns when that is done, or when ctx ends first
// (then with ctx's error, after stopping the publishing goroutine and
// disconnecting all the same).
func (p *Publisher) Shutdown(ctx context.Context) error {
	// Commands received are carried out first (a detect OFF sent just
	// after a reload must not be lost), and their replies go out with the
	// rest of the queue.
	p.stopCommands(ctx)
	p.flush(ctx)
	p.stopLoops(ctx)
	p.events.close()
	if p.print != nil {
		fmt.Fprintf(p.print, "%s offline\n", p.base+message.TopicAvailable)
	}
	if p.client.IsConnectionOpen() && ctx.Err() == nil {
		t := p.client.Publish(p.base+message.TopicAvailable, 1, true, "offline")
		select {
		case <-t.Done():
		case <-ctx.Done():
			p.log.Warn("mqtt: offline not acknowledged before shutdown")
		}
	}
	p.client.Disconnect(250)
	return ctx.Err()
}

// stopCommands has the command goroutine carry out (or hold) what it
// received, then stop.
func (p *Publisher) stopCommands(ctx context.Context) {
	if p.cmdStop != nil {
		p.cmdOnce.Do(func() { close(p.cmdStop) })
		select {
		case <-p.cmdDone:
		case <-ctx.Done():
		}
	}
}

// flush waits until the publishing goroutine has sent what is queued.
func (p *Publisher) flush(ctx context.Context) {
	flushed := make(chan struct{})
	select {
	case p.queue <- outMsg{flush: flushed}:
		select {
		case <-flushed:
		case <-ctx.Done():
		}
	case <-ctx.Done():
	}
}

// stopLoops ends the publishing and connecting goroutines.
func (p *Publisher) stopLoops(ctx context.Context) {
	p.stopOnce.Do(func() { close(p.done) })
	stopped := make(chan struct{})
	go func() { p.wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-ctx.Done():
		p.log.Warn("mqtt: publisher still busy at the shutdown deadline")
	}
}

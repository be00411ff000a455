package publish

import (
	"time"

	"github.com/edgepose/posed/internal/clock"
	"github.com/edgepose/posed/message"
)

// The publisher's settings and options, every one of them: the
// connection and what it publishes (Settings, New's first argument: the
// mqtt block as pipeline/assemble translates it), then what it tells
// about posed, the commands it takes, and how it runs (the Options after).

// Settings are the connection and the publishing.
type Settings struct {
	// Broker is the broker's URL (tcp, ssl, tls, mqtt, mqtts, ws, wss);
	// the embedded broker is tcp:// its address.
	Broker   string
	Prefix   string // topics are <Prefix>/<device>/…
	ClientID string // "": posed-<device>-<random>
	// Username and Password log in (Password read from a file already).
	Username, Password string
	// CA, Cert and Key are PEM files: the broker's authority, and a
	// client certificate with its key (TLSConfig).
	CA, Cert, Key  string
	QoS            int     // of the pose messages
	MaxRate        float64 // pose messages a second at most (0: every frame)
	ConnectTimeout time.Duration
	// Discovery announces posed to Home Assistant under DiscoveryTopic;
	// the ha topic is sent at most every HAInterval while faces are seen,
	// when an angle moved HADeadband degrees or the faces changed.
	Discovery      bool
	DiscoveryTopic string
	HAInterval     time.Duration
	HADeadband     float64
}

// DefaultSettings are the mqtt block's defaults (pipeline/assemble's test
// holds config's to them), for a broker on this machine.
func DefaultSettings() Settings {
	return Settings{Broker: "tcp://127.0.0.1:1883", Prefix: "posed", MaxRate: 10, ConnectTimeout: 5 * time.Second,
		DiscoveryTopic: "homeassistant", HAInterval: 5 * time.Second, HADeadband: 1}
}

// Option sets one of the publisher's settings.
type Option func(*Publisher)

// WithVersion sets posed's version (Home Assistant's sw_version).
func WithVersion(v string) Option { return func(p *Publisher) { p.version = v } }

// WithConfigURL sets the device's configuration_url in Home Assistant.
func WithConfigURL(u string) Option { return func(p *Publisher) { p.configURL = u } }

// WithClock sets the clock that times Home Assistant's ha_interval and
// max_rate (default the wall clock): a test steps it instead of sleeping.
func WithClock(c clock.Clock) Option { return func(p *Publisher) { p.clock = c } }

// WithKeepAlive sets how long the connection may go without a packet from
// the broker before paho pings it (default 30 s; a connection that does
// not answer the ping is lost and reconnected). A test that counts a
// frame's allocations sets it beyond the test's length: the pings are
// allocations of the wall clock's, not of the frames'.
func WithKeepAlive(d time.Duration) Option { return func(p *Publisher) { p.keepAlive = d } }

// WithStateDir sets where the publisher remembers the discovery entries
// it announced, to remove them when discovery is switched off or the
// device is renamed.
func WithStateDir(dir string) Option { return func(p *Publisher) { p.stateDir = dir } }

// WithAttention announces the attention entities: whether the primary
// face attends (its eyes on the road for a driver, looking at the device
// otherwise), its target, its state, and the events.
func WithAttention(a message.AttentionInfo) Option { return func(p *Publisher) { p.attention = &a } }

// WithCommands makes the publisher take commands from
// <prefix>/<device>/set/+ (subscribed on every connection) and announce
// them to Home Assistant (a switch for detection, buttons, the snapshot
// image).
func WithCommands(h CommandHandler) Option { return func(p *Publisher) { p.commands = h } }

// WithDetect is the detection switch as posed starts (published retained
// on the detect topic at each connection).
func WithDetect(on bool) Option { return func(p *Publisher) { p.SetDetect(on) } }

// WithLossless makes Pose wait for room in the queue instead of dropping
// the message, and the first messages wait for the first connection
// attempt: for a replay read as fast as posed processes it, whose every
// frame is to be published. A camera's frames must never wait.
func WithLossless(on bool) Option { return func(p *Publisher) { p.lossless = on } }

// WithHeld starts the publisher held (keeping its commands, not carrying
// them out) where held is true: a reload's next publisher, until it takes
// over (TakeOver).
func WithHeld(held bool) Option { return func(p *Publisher) { p.handover.on = held } }

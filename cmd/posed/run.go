package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"reflect"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/device"
	"github.com/edgepose/posed/internal/redact"
	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/pipeline"
	"github.com/edgepose/posed/pipeline/assemble"
	"github.com/edgepose/posed/pipeline/metrics"
	"github.com/edgepose/posed/pipeline/web"
	"github.com/edgepose/posed/publish"
	"github.com/edgepose/posed/publish/broker"
)

// run is the daemon: it returns when ctx ends (clean shutdown) or a replay
// that does not loop reaches its end.
func run(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer) error {
	return runWith(ctx, cfg, log, stdout, nil, nil)
}

// runWith is run with the reload command's action (nil: the command is
// refused).
//
// carry, if not nil, is what one run hands the next in the same process
// (a reload): the privacy switch as it was, which wins over the state
// directory's record (that may not have been written, or there may be no
// state directory).
func runWith(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer, reload func() error, carry *carried) error {
	started := time.Now()
	if cfg.MQTT.Broker == "embedded" {
		b, err := carry.embedded(&cfg.MQTT, cfg.Device, log)
		if err != nil {
			return err
		}
		defer carry.endEmbedded(b) // after the publisher's end (deferred below)
	}
	var printTo io.Writer
	if cfg.MQTT.Print {
		printTo = stdout
	}
	vctx, stopView := context.WithCancel(context.Background())
	defer stopView()
	view := web.NewView(vctx)
	d, err := newParts(cfg, view, log, reload)
	if err != nil {
		return err
	}
	defer d.stop()
	ctl, att := d.control, d.attention
	if carry != nil && carry.detect != nil {
		ctl.Restore(*carry.detect)
	}
	ps, err := assemble.PublishSettings(cfg.MQTT)
	if err != nil {
		return err
	}
	pub, err := publish.New(ps, cfg.Device, log, printTo,
		publish.WithVersion(version), publish.WithStateDir(cfg.StateDir), publish.WithConfigURL(assemble.HAURL(cfg)),
		publish.WithDetect(ctl.Detecting()), publish.WithCommands(ctl.Handle), publish.WithLossless(assemble.Lossless(cfg.Source)),
		publish.WithAttention(att.Info()), publish.WithHeld(carry.holding()))
	if err != nil {
		return err
	}
	if carry != nil {
		defer func() { on := ctl.Detecting(); carry.detect = &on }()
	}
	defer carry.endPublisher(cfg.MQTT, pub)
	defer carry.startPublisher(pub, log)() // before this run's publisher ends

	// The model loads once the publisher listens for commands: after a
	// reload, a command sent while it loads is carried out, not lost.
	if err := d.loadTracker(cfg); err != nil {
		return err
	}
	logStart(cfg, d, log)
	met := metrics.New(metrics.Sources{})
	met.MQTT, met.MQTTErr = pub.Counters, pub.ConnectionError
	met.Events = func() (int, uint64) { return pub.EventsHeld(), pub.EventsDropped() }
	met.RepliesDropped = pub.RepliesDropped
	met.AttentionSeconds, met.AttentionEvents = att.TargetSeconds, att.EventCounts
	if cfg.Metrics.Listen != "" {
		stop, err := serveHTTP(cfg, met, view, log)
		if err != nil {
			return err
		}
		defer stop()
	}

	watchdog, _ := daemon.SdWatchdogEnabled(false) // WATCHDOG_USEC for this pid; 0 if off
	loop := &pipeline.Loop{
		Tracker: d.tracker, Publisher: pub, Metrics: met, Log: log,
		State:      message.State{Device: cfg.Device, Version: version, Model: cfg.Model.Path, Camera: cfg.Source.Path, Started: started},
		StatsEvery: cfg.MQTT.StatsInterval, Watchdog: watchdog, Notify: notify, Control: ctl, Neutral: d.neutral,
		Stages: d.stages, Lossless: assemble.Lossless(cfg.Source), FrameTime: assemble.ReplayFrameTime(cfg.Source),
	}
	src := assemble.NewSource(cfg.Source, loop.CameraStatus)
	defer src.Close()
	loop.Source = &device.Oriented{Source: src, Rotate: cfg.Source.Rotate, Flip: cfg.Source.Flip}
	err = loop.Run(ctx)
	log.Info("posed stopping", "frames", met.FramesProcessed.Load(), "dropped", met.FramesDropped.Load())
	return err
}

// logStart logs what the daemon runs.
func logStart(cfg config.Config, dm *parts, log *slog.Logger) {
	m := dm.model
	d := cfg.Detect
	log.Info("posed starting", "version", version, "device", cfg.Device, "source", cfg.Source.Path, "model", cfg.Model.Path,
		"outputs", len(m.Outputs), "K", m.Params.K, "members", len(m.Members)+1, "temperature", max(m.Temperature, 1),
		"iterations", cfg.Model.Iterations, "average", cfg.Model.Average, "expert", cfg.Model.ExpertPath(),
		"verify", d.Verify, "scan_every", d.ScanEvery, "broker", redact.URL(cfg.MQTT.Broker))
}

// startEmbedded starts the embedded broker of mqtt.broker: embedded (m's
// credentials are set for the publisher).
func startEmbedded(m *config.MQTT, device string, log *slog.Logger) (*broker.Broker, broker.Auth, error) {
	a, err := assemble.EmbeddedAuth(m, device)
	if err != nil {
		return nil, a, err
	}
	b, err := broker.Start(m.Listen, a, log)
	if err != nil {
		return nil, a, err
	}
	log.Info("embedded MQTT broker listening", "addr", b.Addr(), "anonymous", a.Anonymous, "readers", len(a.Readers))
	return b, a, nil
}

// embedded returns the embedded broker of a run on m, with m's
// credentials set for the publisher: the last run's, kept through the
// reload, where the new configuration asks for the same broker (keeps),
// so that its clients (Home Assistant, posed's own held connection)
// stay connected and a command sent during the reload is handed over as
// with any other broker; else a new one, the last run's closed first.
func (c *carried) embedded(m *config.MQTT, device string, log *slog.Logger) (*broker.Broker, error) {
	if c != nil && c.broker != nil {
		if kept, ok := c.keeps(*m, device); ok {
			*m = kept
			log.Info("embedded MQTT broker kept through the reload", "addr", c.broker.Addr())
			return c.broker, nil
		}
		c.shutdownHeld() // the held publisher first: its connection is to the broker that goes
	}
	b, a, err := startEmbedded(m, device, log)
	if err != nil {
		return nil, err
	}
	if c != nil {
		c.broker, c.brokerAuth, c.brokerListen = b, a, m.Listen
	}
	return b, nil
}

// keeps says whether the running embedded broker serves a run on m: the
// same address, and the same users, topics and posed client (posed's
// credentials, where m leaves them to be drawn, are the running
// broker's). It returns m with those filled in.
func (c *carried) keeps(m config.MQTT, device string) (config.MQTT, bool) {
	if c == nil || c.broker == nil || m.Broker != "embedded" || m.Listen != c.brokerListen {
		return m, false
	}
	if m.Username == "" || (m.Password == "" && m.PasswordFile == "") {
		m.Username, m.Password, m.PasswordFile = c.brokerAuth.PosedUser, c.brokerAuth.PosedPassword, ""
	}
	a, err := assemble.EmbeddedAuth(&m, device)
	return m, err == nil && reflect.DeepEqual(a, c.brokerAuth)
}

// endEmbedded ends a run's embedded broker, after its publisher: kept for
// the next run where a reload held the publisher for it (endPublisher),
// else closed.
func (c *carried) endEmbedded(b *broker.Broker) {
	if c != nil && c.prev != nil {
		return
	}
	b.Close()
	if c != nil {
		c.broker = nil
	}
}

// serveHTTP serves posed's page, /metrics, /healthz and the live view on
// metrics.listen; stop ends it (live streams at once, other requests
// within 2 s).
func serveHTTP(cfg config.Config, met *metrics.Metrics, view *web.View, log *slog.Logger) (stop func(), err error) {
	ln, err := net.Listen("tcp", cfg.Metrics.Listen)
	if err != nil {
		return nil, fmt.Errorf("metrics.listen: %w", err)
	}
	page := func() web.PageInfo {
		return web.PageInfo{Device: cfg.Device, Camera: cfg.Source.Path, Model: cfg.Model.Path, Broker: redact.URL(cfg.MQTT.Broker)}
	}
	srv := web.StartHTTP(ln, web.Handler(met, 5*time.Second, version, page, view), view, web.DefaultHTTPLimits())
	log.Info("metrics listening", "addr", ln.Addr().String())
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}, nil
}

// carried is what a run hands the next one after a reload.
type carried struct {
	detect *bool // the privacy switch (nil: none yet)
	// reloading is set as a reload stops the run; prev is its publisher,
	// held (still subscribed to the commands) until the next run's takes
	// over.
	reloading bool
	prev      *publish.Publisher
	// next is the configuration a reload under way starts (the first one
	// asked for: a newer one asked during the reload is checked again by
	// embedded).
	next *config.Config
	// broker is the embedded broker kept through a reload, started on
	// brokerListen with brokerAuth.
	broker       *broker.Broker
	brokerAuth   broker.Auth
	brokerListen string
}

// holding says whether the next run's publisher starts held: it takes
// over from the last run's (startPublisher).
func (c *carried) holding() bool { return c != nil && c.prev != nil }

// startPublisher has pub take over from the last run's held publisher, if
// any; the function it returns waits until that is done.
func (c *carried) startPublisher(pub *publish.Publisher, log *slog.Logger) (wait func()) {
	if c == nil {
		return func() {}
	}
	c.reloading, c.next = false, nil
	if c.prev == nil {
		return func() {}
	}
	done := takeOver(c.prev, pub, log)
	c.prev = nil
	return func() { <-done }
}

// endPublisher ends a run's publisher: held for the next run when a reload
// stops the run and it can hand over (handsOver), else shut down
// ("offline").
func (c *carried) endPublisher(cfg config.MQTT, pub *publish.Publisher) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if c != nil && c.reloading && c.handsOver(cfg) {
		pub.Hold(ctx) // the next run's publisher takes over (takeOver)
		c.prev = pub
		return
	}
	pub.Shutdown(ctx)
}

// shutdownHeld shuts down a publisher left held by a run after which none
// started (posed stops), and the embedded broker kept for that run.
func (c *carried) shutdownHeld() {
	if c.prev != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		c.prev.Shutdown(ctx)
		c.prev = nil
	}
	if c.broker != nil {
		c.broker.Close()
		c.broker = nil
	}
}

// handsOver says whether a run on cfg keeps its publisher through the
// reload under way: with a broker that outlives the run, which the
// embedded broker does only where the next run keeps it (keeps). With a
// configured client id the two connections take turns on its persistent
// session (publish.Publisher.TakeOver).
func (c *carried) handsOver(cfg config.MQTT) bool {
	if cfg.Broker != "embedded" {
		return true
	}
	if c.next == nil {
		return false
	}
	_, ok := c.keeps(c.next.MQTT, c.next.Device)
	return ok
}

// takeOver has pub take over from prev (publish.TakeOver), waiting 5 s
// at most for pub's subscription. The returned channel closes when it is
// done.
func takeOver(prev, pub *publish.Publisher, log *slog.Logger) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if n := pub.TakeOver(ctx, prev); n > 0 {
			log.Info("carrying out the commands received during the reload", "commands", n)
		}
	}()
	return done
}

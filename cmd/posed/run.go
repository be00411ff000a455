package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/device"
	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/infer/track"
	"github.com/edgepose/posed/publish"
)

// run is the daemon: it returns when ctx ends (clean shutdown) or a replay
// that does not loop reaches its end.
func run(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer) error {
	started := time.Now()
	m, err := gllim.ReadFile(cfg.Model.Path)
	if err != nil {
		return err
	}
	// The file's bytes are garbage now: return them before the forward
	// model is built, so the two never share the peak.
	debug.FreeOSMemory()
	est, err := pose.New(m, cfg.Model.Settings())
	if err != nil {
		return fmt.Errorf("%s: %w", cfg.Model.Path, err)
	}
	d := cfg.Detect
	det, err := detect.New(detect.Params{MinSize: d.MinSize, MaxSize: d.MaxSize, Shift: d.Shift, Scale: d.Scale, IoU: d.IoU, MinScore: d.MinScore})
	if err != nil {
		return err
	}
	calib := detect.CalibrationOf(m.Calibration)
	t := cfg.Track
	tracker := track.New(track.Config{MaxFaces: t.MaxFaces, Every: d.Every, LostAfter: t.LostAfter, MinIoU: t.MinIoU, Smoothing: t.Smoothing, MaxStd: t.MaxStd}, det, calib, est.NewWorker())
	log.Info("posed starting", "version", version, "device", cfg.Device, "source", cfg.Source.Path, "model", cfg.Model.Path,
		"outputs", len(m.Outputs), "K", m.Params.K, "members", len(m.Members)+1, "temperature", max(m.Temperature, 1),
		"iterations", cfg.Model.Iterations, "average", cfg.Model.Average, "broker", config.RedactURL(cfg.MQTT.Broker))
	// The file's bytes and its float64 weights are garbage now that the
	// float32 forward model is built: hand that memory back to the system
	// now rather than over minutes; on a small board it matters.
	m = nil
	debug.FreeOSMemory()

	if cfg.MQTT.Broker == "embedded" {
		a, err := embeddedAuth(&cfg.MQTT, cfg.Device)
		if err != nil {
			return err
		}
		b, err := publish.StartBroker(cfg.MQTT.Listen, a, log)
		if err != nil {
			return err
		}
		defer b.Close()
		log.Info("embedded MQTT broker listening", "addr", b.Addr(), "anonymous", a.Anonymous, "readers", len(a.Readers))
	}
	var printTo io.Writer
	if cfg.MQTT.Print {
		printTo = stdout
	}
	pub, err := publish.New(cfg.MQTT, cfg.Device, log, printTo,
		publish.WithVersion(version), publish.WithStateDir(cfg.StateDir), publish.WithConfigURL(haURL(cfg)))
	if err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		pub.Shutdown(sctx)
	}()

	met := newMetrics()
	met.mqtt, met.mqttErr = pub.Counters, pub.ConnectionError
	if cfg.Metrics.Listen != "" {
		ln, err := net.Listen("tcp", cfg.Metrics.Listen)
		if err != nil {
			return fmt.Errorf("metrics.listen: %w", err)
		}
		page := func() pageInfo {
			return pageInfo{Device: cfg.Device, Camera: cfg.Source.Path, Model: cfg.Model.Path, Broker: config.RedactURL(cfg.MQTT.Broker)}
		}
		srv := &http.Server{Handler: met.handler(5*time.Second, version, page), ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			srv.Shutdown(sctx)
		}()
		log.Info("metrics listening", "addr", ln.Addr().String())
	}

	state := publish.StateMsg{Version: version, Model: cfg.Model.Path, Camera: cfg.Source.Path, Status: "running", Started: started}
	pub.Retain(publish.TopicState, withSchema(state, cfg.Device))
	defer func() {
		// What stays retained after posed stops must agree with
		// "available: offline": no faces seen, the camera not in use.
		state.Status, state.Faces = "stopped", 0
		pub.NoFaces()
		pub.Retain(publish.TopicState, withSchema(state, cfg.Device))
		pub.Retain(publish.TopicCamera, publish.CameraMsg{Schema: publish.SchemaVersion, Device: cfg.Device, Camera: cfg.Source.Path,
			Status: "offline", Error: "posed stopped", Changed: time.Now()})
	}()

	src := &device.Reopening{
		Open:    func() (device.Source, error) { return openSource(cfg.Source) },
		Backoff: cfg.Source.Reopen, MaxWait: cfg.Source.ReopenMax,
		OnStatus: func(s device.Status) {
			met.cameraOnline.Store(s.Online)
			if s.Online {
				met.cameraErr.Store("")
			} else {
				met.cameraErr.Store(fmt.Sprintf("%v (retry in %v)", s.Err, s.Retry.Round(time.Millisecond)))
			}
			msg := publish.CameraMsg{Schema: publish.SchemaVersion, Device: cfg.Device, Camera: cfg.Source.Path, Status: "online", Changed: time.Now()}
			if !s.Online {
				msg.Status, msg.Error, msg.RetryS = "offline", s.Err.Error(), s.Retry.Seconds()
				log.Warn("camera offline", "camera", cfg.Source.Path, "err", s.Err, "retry", s.Retry)
				pub.NoFaces()
			} else {
				log.Info("camera online", "camera", cfg.Source.Path)
			}
			pub.Retain(publish.TopicCamera, msg)
		},
	}
	defer src.Close()

	notify := newNotifier()
	loop := &frameLoop{cfg: cfg, log: log, src: src, tracker: tracker, pub: pub, met: met, notify: notify, state: &state}
	err = loop.run(ctx)
	log.Info("posed stopping", "frames", met.framesProcessed.Load(), "dropped", met.framesDropped.Load())
	return err
}

// haURL is the device's configuration_url in Home Assistant: mqtt.ha_url,
// else posed's HTTP page where metrics.listen can be reached from another
// host (by its address, or by the host name when it listens on all), else
// none.
func haURL(cfg config.Config) string {
	if cfg.MQTT.HAURL != "" {
		return cfg.MQTT.HAURL
	}
	host, port, err := net.SplitHostPort(cfg.Metrics.Listen)
	if err != nil || port == "0" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || host == "localhost" {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return ""
		}
		host = h
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// embeddedAuth sets who may use the embedded broker: posed itself as
// mqtt.username with mqtt.password (or password_file) where they are set,
// else as "posed" with a password drawn for this run (m is updated so that
// the publisher logs in with it); the readers of mqtt.embedded_users; and
// anonymous readers if mqtt.embedded_anonymous.
func embeddedAuth(m *config.MQTT, device string) (publish.BrokerAuth, error) {
	a := publish.BrokerAuth{Anonymous: m.EmbeddedAnonymous, Topics: publish.OwnTopics(*m, device)}
	pw := m.Password
	if m.PasswordFile != "" {
		b, err := config.ReadFileLimited(m.PasswordFile)
		if err != nil {
			return a, fmt.Errorf("mqtt.password_file: %w", err)
		}
		pw = strings.TrimSpace(string(b))
	}
	if m.Username == "" || pw == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return a, err
		}
		m.Username, m.Password, m.PasswordFile = "posed", hex.EncodeToString(b[:]), ""
		pw = m.Password
	}
	a.PosedUser, a.PosedPassword = m.Username, pw
	if m.EmbeddedUsers != "" {
		data, err := config.ReadFileLimited(m.EmbeddedUsers)
		if err != nil {
			return a, fmt.Errorf("mqtt.embedded_users: %w", err)
		}
		if a.Readers, err = publish.ReadUsers(data); err != nil {
			return a, fmt.Errorf("mqtt.embedded_users: %s: %w", m.EmbeddedUsers, err)
		}
		if _, clash := a.Readers[a.PosedUser]; clash {
			return a, fmt.Errorf("mqtt.embedded_users: %s lists %q, posed's own user", m.EmbeddedUsers, a.PosedUser)
		}
	}
	return a, nil
}

// openSource opens a camera for /dev paths, a replay otherwise.
func openSource(s config.Source) (device.Source, error) {
	if strings.HasPrefix(s.Path, "/dev/") {
		return device.OpenCamera(s.Path, device.CameraOptions{Width: s.Width, Height: s.Height, FPS: s.FPS, Format: s.Format, Buffers: s.Buffers, Timeout: s.Timeout})
	}
	return device.OpenReplay(s.Path, device.ReplayOptions{FPS: s.FPS, Loop: s.Loop})
}

func withSchema(s publish.StateMsg, dev string) publish.StateMsg {
	s.Schema, s.Device = publish.SchemaVersion, dev
	return s
}

// frameLoop captures in one goroutine and processes in another; between
// them a single slot holds the newest frame (latest frame wins: a frame
// not yet taken when a newer one arrives is dropped and counted).
type frameLoop struct {
	cfg     config.Config
	log     *slog.Logger
	src     device.Source
	tracker *track.Tracker
	pub     *publish.Publisher
	met     *metrics
	notify  *notifier
	state   *publish.StateMsg

	mu      sync.Mutex
	pending *device.Frame
	free    []*device.Frame
	ready   chan struct{}   // a frame is pending (capacity 1)
	ended   chan error      // capture's reason to stop
	badSeen map[string]bool // bad-frame errors already logged (capture only)
}

// maxBadLogged bounds the distinct bad-frame errors remembered, so that a
// camera sending endless different corrupt frames cannot grow the set.
const maxBadLogged = 256

// dropBad counts a frame the source could not deliver (undecodable or of
// the wrong size) and logs it the first time its error is seen: a replay
// that loops over one bad file says so once, not once per loop.
func (l *frameLoop) dropBad(err error) {
	l.met.framesBad.Add(1)
	msg := err.Error()
	if l.badSeen[msg] || len(l.badSeen) > maxBadLogged {
		return
	}
	if l.badSeen == nil {
		l.badSeen = map[string]bool{}
	}
	l.badSeen[msg] = true
	if len(l.badSeen) > maxBadLogged {
		l.log.Warn("frame dropped; further bad frames are only counted (frames_bad)", "err", err, "bad_frames", l.met.framesBad.Load())
		return
	}
	l.log.Warn("frame dropped", "err", err, "bad_frames", l.met.framesBad.Load())
}

func (l *frameLoop) run(ctx context.Context) error {
	l.free = []*device.Frame{{}, {}, {}}
	l.ready = make(chan struct{}, 1)
	l.ended = make(chan error, 1)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.ended <- l.capture(cctx)
	}()
	defer wg.Wait()
	l.notify.send("READY=1")

	statsEvery := time.NewTicker(l.cfg.MQTT.StatsInterval)
	defer statsEvery.Stop()
	var dog <-chan time.Time
	if l.notify.watchdog > 0 {
		t := time.NewTicker(l.notify.watchdog / 2)
		defer t.Stop()
		dog = t.C
	}
	var lastDog int64
	var lastStats time.Time = time.Now()
	var lastProcessed uint64
	prevFaces := 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-l.ended:
			// Process what is left, then stop.
			if f := l.take(); f != nil {
				prevFaces = l.process(f, prevFaces)
			}
			if errors.Is(err, device.ErrEnd) {
				l.log.Info("replay finished")
				return nil
			}
			return err
		case <-l.ready:
			if f := l.take(); f != nil {
				prevFaces = l.process(f, prevFaces)
			}
		case <-dog:
			// The watchdog says the process is alive and its loops turn:
			// frames are flowing, or the camera is offline and being
			// re-opened with backoff (camera health is the camera topic,
			// the metrics and /healthz). A camera said to be online whose
			// frames stop, or a processing loop that hangs, lets systemd
			// restart the service.
			if last := l.met.lastFrame.Load(); last != lastDog || !l.met.cameraOnline.Load() {
				lastDog = last
				l.notify.send("WATCHDOG=1")
			}
		case now := <-statsEvery.C:
			p := l.met.framesProcessed.Load()
			l.pub.Stats(publish.StatsMsg{
				UptimeS: round3(now.Sub(l.met.started).Seconds()), FramesIn: l.met.framesIn.Load(), FramesProcessed: p,
				FramesDropped: l.met.framesDropped.Load(), FramesBad: l.met.framesBad.Load(),
				FPS: round3(float64(p-lastProcessed) / now.Sub(lastStats).Seconds()), Faces: l.met.faces.Load(),
				LatencyP50Ms: round3(1000 * l.met.stages["latency"].median()),
			})
			lastStats, lastProcessed = now, p
		}
	}
}

// capture reads frames until the context ends or the source gives up.
func (l *frameLoop) capture(ctx context.Context) error {
	for {
		l.mu.Lock()
		f := l.free[len(l.free)-1]
		l.free = l.free[:len(l.free)-1]
		l.mu.Unlock()
		err := l.src.Next(ctx, f)
		if err != nil {
			l.mu.Lock()
			l.free = append(l.free, f)
			l.mu.Unlock()
			if errors.Is(err, device.ErrFrameSize) || errors.Is(err, device.ErrBadFrame) {
				l.dropBad(err)
				continue
			}
			return err
		}
		l.met.framesIn.Add(1)
		l.mu.Lock()
		if l.pending != nil {
			l.free = append(l.free, l.pending)
			l.met.framesDropped.Add(1)
		}
		l.pending = f
		l.mu.Unlock()
		select {
		case l.ready <- struct{}{}:
		default:
		}
	}
}

func (l *frameLoop) take() *device.Frame {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := l.pending
	l.pending = nil
	return f
}

// process runs the tracker on f and publishes; it returns the number of
// faces for the next call.
func (l *frameLoop) process(f *device.Frame, prevFaces int) int {
	defer func() {
		l.mu.Lock()
		l.free = append(l.free, f)
		l.mu.Unlock()
	}()
	t0 := time.Now()
	faces := l.tracker.Process(f.Gray)
	tm := l.tracker.Timing()
	if tm.Detected {
		l.met.stages["detect"].observe(tm.Detect)
	}
	l.met.stages["pose"].observe(tm.Pose)
	l.met.stages["frame"].observe(time.Since(t0))
	l.met.framesProcessed.Add(1)
	l.met.faces.Add(uint64(len(faces)))
	l.met.lastFrame.Store(time.Now().UnixNano())
	if len(faces) > 0 || prevFaces > 0 {
		msg := publish.PoseMsg{Camera: l.cfg.Source.Path, Seq: f.Seq, Captured: f.Time, Width: f.Gray.Rect.Dx(), Height: f.Gray.Rect.Dy(), Faces: make([]publish.FaceMsg, 0, len(faces))}
		for _, fc := range faces {
			msg.Faces = append(msg.Faces, faceMsg(fc))
		}
		l.pub.Pose(msg)
		l.met.stages["latency"].observe(time.Since(f.Time))
	}
	if len(faces) != l.state.Faces {
		l.state.Faces = len(faces)
		l.pub.Retain(publish.TopicState, withSchema(*l.state, l.cfg.Device))
	}
	return len(faces)
}

func faceMsg(f track.Face) publish.FaceMsg {
	b := f.Box
	m := publish.FaceMsg{Track: f.ID, Box: [4]float64{r2(b.X), r2(b.Y), r2(b.X + b.W), r2(b.Y + b.H)}, Score: r2(f.Score)}
	ptr := func(v float64) *float64 { v = r2(v); return &v }
	if f.Has[0] {
		m.Yaw, m.YawStd = ptr(f.Angles[0]), ptr(f.Std[0])
	}
	if f.Has[1] {
		m.Pitch, m.PitchStd = ptr(f.Angles[1]), ptr(f.Std[1])
	}
	if f.Has[2] {
		m.Roll, m.RollStd = ptr(f.Angles[2]), ptr(f.Std[2])
	}
	return m
}

func r2(v float64) float64 { return float64(int64(v*100+0.5*sign(v))) / 100 }

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}

// Command posed is the head-pose daemon: frames from a V4L2 camera (or a
// replay) → faces (pigo) → pose and refined box (hybrid GLLiM) → MQTT.
//
//	posed [-config FILE] [-source PATH] [-broker URL|embedded] [-device-id ID] [-model FILE]
//	posed -check-config -config FILE
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/pipeline/assemble"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(realMain(os.Args[1:], os.Stdout, os.Stderr))
}

func realMain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("posed", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "YAML configuration file (default: built-in defaults)")
	source := fs.String("source", "", "frame source: a /dev/video* device, an image folder or a video file (overrides source.path)")
	broker := fs.String("broker", "", "MQTT broker URL, or \"embedded\" (overrides mqtt.broker)")
	device := fs.String("device-id", "", "device id in MQTT topics (overrides device)")
	model := fs.String("model", "", "model file (overrides model.path)")
	check := fs.Bool("check-config", false, "validate the configuration and exit")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0 // -h: the usage was asked for
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintln(stdout, "posed", version)
		return 0
	}
	// load reads the configuration (again, on SIGHUP) with the flags over it.
	load := func() (config.Config, error) {
		return loadConfig(*cfgPath, flagOverrides{*source, *broker, *device, *model})
	}
	cfg, err := load()
	if err != nil {
		fmt.Fprintln(stderr, "posed:", err)
		return 2
	}
	if *check {
		if err := checkStart(cfg, nil); err != nil {
			fmt.Fprintln(stderr, "posed: config:", err)
			return 2
		}
		for _, w := range cfg.Warnings(*cfgPath) {
			fmt.Fprintln(stderr, "posed: warning:", w)
		}
		fmt.Fprintln(stdout, "posed: configuration ok")
		return 0
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	stopping := make(chan struct{})
	go func() {
		<-ctx.Done() // SIGTERM or SIGINT: stopping starts now
		notify("STOPPING=1")
		close(stopping)
	}()
	// A quick shutdown can return before that goroutine has run: wait for
	// it, or systemd never hears STOPPING=1.
	defer func() {
		if ctx.Err() != nil {
			<-stopping
		}
	}()
	var carry carried
	defer carry.shutdownHeld() // a run that failed to start leaves the last one's publisher held
	for {
		log := newLogger(cfg.Log, stderr)
		for _, w := range cfg.Warnings(*cfgPath) {
			log.Warn(w)
		}
		next, err := runUntilReload(ctx, cfg, log, stdout, hup, load, &carry)
		if err != nil && !errors.Is(err, context.Canceled) {
			log.Error("posed stopped", "err", err)
			return 1
		}
		if next == nil {
			return 0
		}
		cfg = *next
	}
}

// flagOverrides are the command line's values over the file's ("": none).
type flagOverrides struct{ source, broker, device, model string }

// loadConfig reads the file at path (the defaults if ""), puts the flags
// over it, fills in what depends on the machine (the device id, the model
// found, systemd's state directory) and validates the result.
func loadConfig(path string, o flagOverrides) (config.Config, error) {
	cfg := config.Default()
	if path != "" {
		c, err := config.Load(path, assemble.Problems)
		if err != nil {
			return cfg, err
		}
		cfg = c
	}
	for _, f := range []struct {
		flag string
		dst  *string
	}{{o.source, &cfg.Source.Path}, {o.broker, &cfg.MQTT.Broker}, {o.device, &cfg.Device}, {o.model, &cfg.Model.Path}} {
		if f.flag != "" {
			*f.dst = f.flag
		}
	}
	if cfg.Device == "" {
		cfg.Device = config.DefaultDevice()
	}
	if cfg.Model.Path == "" {
		p, err := config.FindModel(config.ModelPlaces())
		if err != nil {
			return cfg, err
		}
		cfg.Model.Path = p
	}
	if cfg.StateDir == "" {
		// systemd may list several directories, ':'-separated.
		cfg.StateDir, _, _ = strings.Cut(os.Getenv("STATE_DIRECTORY"), ":")
	}
	if err := cfg.Validate(assemble.Problems); err != nil {
		return cfg, fmt.Errorf("config: %w", err)
	}
	return cfg, nil
}

// runUntilReload runs posed with cfg until ctx ends, the run ends, or a
// SIGHUP or the reload command brings a configuration that loads and
// validates: it then stops the run and returns the new one. A
// configuration that does not load is logged (and, for the command,
// answered on the error topic) and changes nothing.
func runUntilReload(ctx context.Context, cfg config.Config, log *slog.Logger, stdout io.Writer, hup <-chan os.Signal, load func() (config.Config, error), carry *carried) (*config.Config, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The reload command loads the configuration in the command's own
	// goroutine, so that its error goes back to whoever sent it.
	asked := make(chan config.Config, 1)
	reload := func() error {
		c, err := load()
		if err != nil {
			return err
		}
		// Everything the new configuration needs is checked before the
		// running one is stopped: a reload to a model that does not load or
		// a port that is taken is refused, posed keeps running.
		if err := checkStart(c, &cfg); err != nil {
			return err
		}
		select {
		case asked <- c:
			return nil
		default:
			return errors.New("a reload is already under way")
		}
	}
	done := make(chan error, 1)
	go func() { done <- runWith(rctx, cfg, log, stdout, reload, carry) }()
	var next *config.Config
	for {
		select {
		case err := <-done:
			if next != nil {
				return next, nil
			}
			return nil, err
		case c := <-asked:
			// Reloads asked for while one is under way join it (the
			// newest configuration wins): a storm of SIGHUPs is one
			// restart, one log line and one RELOADING=1.
			if next == nil {
				carry.reloading, carry.next = true, &c
				log.Info("reloading the configuration")
				notify(fmt.Sprintf("RELOADING=1\nMONOTONIC_USEC=%d", monotonicUsec()))
				cancel()
			}
			next = &c
		case <-hup:
			// The same path as the reload command's.
			if err := reload(); err != nil {
				log.Error("reload refused; still running the previous configuration", "err", err)
			}
		}
	}
}

func newLogger(c config.Log, w io.Writer) *slog.Logger {
	var lv slog.Level
	lv.UnmarshalText([]byte(c.Level)) // validated already
	o := &slog.HandlerOptions{Level: lv}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, o))
	}
	return slog.New(slog.NewTextHandler(w, o))
}

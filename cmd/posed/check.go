package main

import (
	"fmt"
	"net"
	"runtime/debug"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/publish"
)

// newEstimator loads the model of cfg and, where there is one, its profile
// expert; it returns the estimator and the model (for its calibration and
// description). Errors name the field.
func newEstimator(cfg config.Model) (*pose.Estimator, *gllim.Model, error) {
	m, err := gllim.ReadFile(cfg.Path)
	if err != nil {
		return nil, nil, fmt.Errorf("model.path: %w", err)
	}
	// The file's bytes are garbage now: return them before the forward
	// model is built, so the two never share the peak.
	debug.FreeOSMemory()
	est, err := pose.New(m, cfg.Settings())
	if err != nil {
		return nil, nil, fmt.Errorf("model.path: %s: %w", cfg.Path, err)
	}
	// The forward model is built: keep the model's description, not its
	// float64 weights (several times the forward model's size), and return
	// them before the expert is read, so that the two never share the peak.
	m = m.Description()
	debug.FreeOSMemory()
	if p := cfg.ExpertPath(); p != "" {
		x, err := gllim.ReadFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("model.expert: %w", err)
		}
		debug.FreeOSMemory() // the expert file's bytes, as the model's above
		xp, err := pose.ExpertOf(x)
		if err == nil {
			est, err = est.WithExpert(xp)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("model.expert: %s: %w", p, err)
		}
	}
	return est, m, nil
}

// checkStart checks what starting posed with cfg needs beyond a valid
// file: the model loads and builds, the detector's settings hold, the
// broker's password, TLS and users files read, and the listen addresses
// can be bound. running, if not nil, is the configuration in use: its own
// addresses are held by it and will be free once it stops. -check-config
// and every reload run it, so that a reload refuses what start would fail
// on instead of stopping posed.
func checkStart(cfg config.Config, running *config.Config) error {
	if _, _, err := newEstimator(cfg.Model); err != nil {
		return err
	}
	if _, err := newDetector(cfg.Detect); err != nil {
		return fmt.Errorf("detect: %w", err)
	}
	if _, err := cfg.MQTT.ReadPassword(); err != nil {
		return err
	}
	if _, err := publish.TLSConfig(cfg.MQTT); err != nil {
		return err
	}
	listens := []struct{ field, addr, old string }{{"metrics.listen", cfg.Metrics.Listen, ""}}
	if running != nil {
		listens[0].old = running.Metrics.Listen
	}
	if cfg.MQTT.Broker == "embedded" {
		m := cfg.MQTT
		if _, err := embeddedAuth(&m, cfg.Device); err != nil {
			return err
		}
		old := ""
		if running != nil && running.MQTT.Broker == "embedded" {
			old = running.MQTT.Listen
		}
		listens = append(listens, struct{ field, addr, old string }{"mqtt.listen", cfg.MQTT.Listen, old})
	}
	for _, l := range listens {
		if l.addr == "" || l.addr == l.old {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			return fmt.Errorf("%s: %w (another program, or another posed, listens there)", l.field, err)
		}
		ln.Close()
	}
	return nil
}

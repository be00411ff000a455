package main

import (
	"fmt"
	"net"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/pipeline/assemble"
	"github.com/edgepose/posed/publish"
)

// checkStart checks what starting posed with cfg needs beyond a valid
// file: the model loads and builds, the detector's settings hold, the
// broker's password, TLS and users files read, and the listen addresses
// can be bound. running, if not nil, is the configuration in use: its own
// addresses are held by it and will be free once it stops. -check-config
// and every reload run it, so that a reload refuses what start would fail
// on instead of stopping posed.
func checkStart(cfg config.Config, running *config.Config) error {
	d, err := newParts(cfg, nil, discard, nil)
	if err != nil {
		return err
	}
	d.stop()
	if err := d.loadTracker(cfg); err != nil {
		return err
	}
	ps, err := assemble.PublishSettings(cfg.MQTT)
	if err != nil {
		return err
	}
	if _, err := publish.TLSConfig(ps); err != nil {
		return err
	}
	listens := []struct{ field, addr, old string }{{"metrics.listen", cfg.Metrics.Listen, ""}}
	if running != nil {
		listens[0].old = running.Metrics.Listen
	}
	if cfg.MQTT.Broker == "embedded" {
		m := cfg.MQTT
		if _, err := assemble.EmbeddedAuth(&m, cfg.Device); err != nil {
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

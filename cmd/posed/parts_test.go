package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/pipeline/web"
)

// The builder lists the stages in the order a frame needs them (the
// primary face before the neutral pose samples it, relative angles before
// attention reads them, the published faces last to the live view), wires
// the neutral pose's changes to the control, and the driver's speed
// command to attention; without a view the list has no view.
func TestPartsOrderAndWiring(t *testing.T) {
	cfg := config.Default()
	cfg.Attention.Profile = "driver"
	cfg.Attention.Targets = map[string]config.AttentionTarget{"road": {Yaw: []float64{-20, 20}, Pitch: []float64{-20, 20}}}
	view := web.NewView(context.Background())
	p, err := newParts(cfg, view, discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	var kinds []string
	for _, s := range p.stages {
		kinds = append(kinds, fmt.Sprintf("%T", s))
	}
	if got, want := strings.Join(kinds, " "), "*zones.Zoning *neutral.Pose pipeline.attentionStage *web.View"; got != want {
		t.Errorf("stages %s, want %s", got, want)
	}
	if _, err := p.control.Handle(message.CommandSpeed, []byte("50")); err != nil {
		t.Errorf("set/speed through the control: %v", err)
	}
	if _, err := p.control.Handle(message.CommandReload, nil); err == nil {
		t.Error("set/reload carried out without a reload")
	}
	q, err := newParts(config.Default(), nil, discard, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.stop()
	_, speedErr := q.control.Handle(message.CommandSpeed, []byte("50"))
	if len(q.stages) != 3 || speedErr == nil {
		t.Errorf("without a view and a driver: %d stages, set/speed %v (want refused)", len(q.stages), speedErr)
	}
	// A bad attention block is refused by the builder, so -check-config
	// and a reload refuse it too.
	bad := config.Default()
	bad.Attention.FOV = 200
	if _, err := newParts(bad, nil, discard, nil); err == nil || !strings.Contains(err.Error(), "attention") {
		t.Errorf("a 200° field of view: %v, want an error naming attention", err)
	}
	if err := checkStart(bad, nil); err == nil {
		t.Error("checkStart accepted a 200° field of view")
	}
}

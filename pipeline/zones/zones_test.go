package zones

import (
	"slices"
	"testing"

	"github.com/edgepose/posed/message"
)

// Zones by box centre; the primary face by each mode.
func TestZoning(t *testing.T) {
	zones := map[string][4]float64{"driver": {0, 0, 320, 480}, "passenger": {320, 0, 640, 480}, "left": {0, 0, 200, 480}}
	faces := []message.Face{
		{Track: 1, Box: [4]float64{400, 100, 520, 220}}, // passenger, largest
		{Track: 2, Box: [4]float64{100, 100, 180, 180}}, // driver and left
	}
	z := New(Options{Named: zones, Mode: "largest"})
	if got := z.In(centre(&faces[1])); !slices.Equal(got, []string{"driver", "left"}) {
		t.Errorf("zones of face 2: %v", got)
	}
	if got := z.In(700, 10); got != nil {
		t.Errorf("zones outside every zone: %v", got)
	}
	for _, c := range []struct {
		p    Options
		want int
	}{
		{Options{Mode: "largest"}, 0},
		{Options{Mode: "nearest", Point: [2]float64{150, 150}}, 1},
		{Options{Mode: "zone", Zone: "driver"}, 1},
		{Options{Mode: "zone", Zone: "passenger"}, 0},
	} {
		c.p.Named = zones
		if got := New(c.p).Primary(faces); got != c.want {
			t.Errorf("%+v: primary %d, want %d", c.p, got, c.want)
		}
	}
	if got := New(Options{Named: zones, Mode: "zone", Zone: "left"}).Primary(faces[:1]); got != -1 {
		t.Errorf("no face in the zone: %d, want -1", got)
	}
	if got := (*Zoning)(nil).Primary(nil); got != -1 {
		t.Errorf("no faces: %d", got)
	}
}

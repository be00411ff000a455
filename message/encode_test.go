package message

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"
)

// randomPose is a pose message with the values a frame gives and the
// awkward ones it might: strings needing escapes, tiny and huge numbers,
// unset angles, no faces or no zones, times in other zones.
func randomPose(rng *rand.Rand) (*Pose, int) {
	strs := []string{"", "cam", "/dev/video0", `a "quoted" \ path`, "<tag> & co", "tab\there\nnewline\x01\x1f",
		"héllo wörld", "\u2028line\u2029sep", "bad \xff utf8", "emoji 🙂", "yaw+"}
	str := func() string { return strs[rng.IntN(len(strs))] }
	nums := []float64{0, 1, -1, 12.35, -3.21, 0.01, 1e-7, -2.5e-9, 1e21, 123456789.12, 5e-324, 1.7976931348623157e308, 0.1 + 0.2}
	num := func() float64 {
		if rng.IntN(3) == 0 {
			return nums[rng.IntN(len(nums))]
		}
		return math.Round((rng.Float64()*200-100)*100) / 100
	}
	opt := func() Num {
		if rng.IntN(4) == 0 {
			return Num{}
		}
		return Some(num())
	}
	zone := time.FixedZone("x", rng.IntN(20)*1800-18000)
	m := &Pose{Schema: 1, Device: str(), Camera: str(), Seq: rng.Uint64(), LatencyMs: num(),
		Captured: time.Unix(rng.Int64N(2e9), rng.Int64N(1e9)).In(zone), Width: rng.IntN(4000) - 5, Height: rng.IntN(4000)}
	n := rng.IntN(4)
	if n > 0 || rng.IntN(2) == 0 {
		m.Faces = []Face{}
	}
	for range n {
		f := Face{Track: rng.Uint64N(1 << 40), Box: [4]float64{num(), num(), num(), num()}, Score: num(), View: str(),
			Yaw: opt(), Pitch: opt(), Roll: opt(), YawStd: opt(), PitchStd: opt(), RollStd: opt(),
			RawYaw: opt(), RawPitch: opt(), RawRoll: opt()}
		for range rng.IntN(3) {
			f.Zones = append(f.Zones, str())
		}
		if rng.IntN(2) == 0 {
			for i := range f.Landmarks {
				f.Landmarks[i] = [2]float64{num(), num()}
			}
		}
		switch rng.IntN(3) {
		case 1:
			f.Target, f.Dwell = Label{On: true}, Some(num())
		case 2:
			f.Target, f.Dwell = Label{Name: str(), Known: true, On: true}, Some(num())
		}
		if rng.IntN(2) == 0 {
			f.Attention = str()
			if rng.IntN(2) == 0 {
				f.AttentionReason = str()
			}
		}
		m.Faces = append(m.Faces, f)
	}
	return m, rng.IntN(n+1) - 1
}

// The hand-written encoders write exactly what encoding/json writes.
func TestEncodersMatchEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var buf []byte
	for i := range 5000 {
		m, prim := randomPose(rng)
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		buf = AppendPose(buf[:0], m)
		if !bytes.Equal(buf, want) {
			t.Fatalf("message %d:\n got %s\nwant %s", i, buf, want)
		}
		pm := &Primary{Schema: 1, Device: m.Device, Seq: m.Seq, Captured: m.Captured}
		if prim >= 0 {
			pm.Face = &m.Faces[prim]
		}
		want, _ = json.Marshal(pm)
		buf = AppendPrimary(buf[:0], pm)
		if !bytes.Equal(buf, want) {
			t.Fatalf("primary %d:\n got %s\nwant %s", i, buf, want)
		}
	}
	// And it reads back as it was.
	var back Pose
	m, _ := randomPose(rand.New(rand.NewPCG(3, 4)))
	if err := json.Unmarshal(AppendPose(nil, m), &back); err != nil {
		t.Fatal(err)
	}
	for i := range m.Faces {
		if back.Faces[i].Yaw != m.Faces[i].Yaw || back.Faces[i].RawRoll != m.Faces[i].RawRoll || back.Faces[i].Target != m.Faces[i].Target {
			t.Errorf("face %d read back %+v, was %+v", i, back.Faces[i], m.Faces[i])
		}
	}
}

// An unset Num is null where the field is not omitted (the HA summary).
func TestNumNull(t *testing.T) {
	b, err := json.Marshal(HA{Schema: 1, Device: "cam", Track: Some(3), Yaw: Some(-1.5)})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"schema":1,"device":"cam","faces":0,"track":3,"yaw":-1.5,"pitch":null,"roll":null}`; string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	var h HA
	if err := json.Unmarshal(b, &h); err != nil || h.Pitch.Set || h.Yaw != Some(-1.5) {
		t.Errorf("read back %+v, %v", h, err)
	}
	if err := json.Unmarshal([]byte(`{"yaw":"x"}`), &h); err == nil {
		t.Error("a string read as a number")
	}
}

// Encoding a frame's messages allocates nothing once the buffer has grown.
func TestEncodersDoNotAllocate(t *testing.T) {
	m, _ := randomPose(rand.New(rand.NewPCG(5, 6)))
	buf := AppendPose(nil, m)
	if a := testing.AllocsPerRun(100, func() { buf = AppendPose(buf[:0], m) }); a != 0 {
		t.Errorf("AppendPose allocates %.0f times", a)
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "<&>", "\u2028", "\xff\xfe", "\x00\x1f\x7f", "ok 🙂"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}

func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, math.Copysign(0, -1), 1e-7, 1e21, 123.45, 5e-324} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		want, _ := json.Marshal(v)
		if got := appendFloat(nil, v); !bytes.Equal(got, want) {
			t.Fatalf("%v: got %s, want %s", v, got, want)
		}
	})
}

// Hundredths agrees with decimal rounding of v to two places
// (strconv's, of the exact binary value) wherever v is not within a
// rounding error of a tie, and rounds ties away from zero.
func TestHundredths(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 100000; i++ {
		v := (rng.Float64()*2 - 1) * math.Pow(10, float64(rng.IntN(7)))
		if f := math.Abs(v*100 - math.Trunc(v*100)); math.Abs(f-0.5) < 1e-6 {
			continue // a tie, or too near one for the two to agree
		}
		want, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'f', 2, 64), 64)
		if got := Hundredths(v); got != want {
			t.Fatalf("Hundredths(%v) = %v, want %v", v, got, want)
		}
	}
	for v, want := range map[float64]float64{0.125: 0.13, -0.125: -0.13, 0.375: 0.38, -0.004: 0, 12.3456: 12.35} {
		if got := Hundredths(v); got != want {
			t.Errorf("Hundredths(%v) = %v, want %v (ties away from zero)", v, got, want)
		}
	}
}

// Round rounds every number of a face to hundredths and leaves an unset
// one unset: each float64 and Num field is checked by reflection, so a
// field added to Face and forgotten by Round fails here.
func TestFaceRound(t *testing.T) {
	const v = 12.3456
	var f Face
	fv := reflect.ValueOf(&f).Elem()
	nums := 0
	for i := range fv.NumField() {
		switch x := fv.Field(i); x.Interface().(type) {
		case float64:
			x.SetFloat(v)
			nums++
		case [4]float64:
			for j := range 4 {
				x.Index(j).SetFloat(v)
			}
			nums++
		case [5][2]float64:
			for j := range 5 {
				x.Index(j).Index(0).SetFloat(v)
				x.Index(j).Index(1).SetFloat(v)
			}
			nums++
		case Num:
			if i%2 == 0 {
				x.Set(reflect.ValueOf(Some(v)))
				nums++
			}
		}
	}
	f.Round()
	for i := range fv.NumField() {
		name := fv.Type().Field(i).Name
		switch x := fv.Field(i).Interface().(type) {
		case float64:
			if x != 12.35 {
				t.Errorf("%s = %v, want 12.35", name, x)
			}
		case [4]float64:
			if x != [4]float64{12.35, 12.35, 12.35, 12.35} {
				t.Errorf("%s = %v", name, x)
			}
		case [5][2]float64:
			for _, p := range x {
				if p != [2]float64{12.35, 12.35} {
					t.Errorf("%s = %v", name, x)
				}
			}
		case Num:
			want := Num{}
			if i%2 == 0 {
				want = Some(12.35)
			}
			if x != want {
				t.Errorf("%s = %+v, want %+v", name, x, want)
			}
		}
	}
	if nums < 8 {
		t.Fatalf("only %d numbers set: the test no longer sees Face's fields", nums)
	}
}

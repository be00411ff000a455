package dataset

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// dataDir is Root(), skipping the test where the data sets are missing.
func dataDir(t testing.TB) string {
	d := Root()
	if _, err := os.Stat(d); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true and no data set at %s (set POSED_DATA)", d)
		}
		t.Skipf("no data set at %s (set POSED_DATA)", d)
	}
	return d
}

func TestReadLabelsPointing04(t *testing.T) {
	s, err := Read(filepath.Join(dataDir(t), "pointing04"))
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 2790 {
		t.Fatalf("%d samples, want 2790", len(s))
	}
	subjects := map[string]int{}
	for _, x := range s {
		subjects[x.Subject]++
		if x.HasRoll {
			t.Fatalf("%s has a roll", x.Path)
		}
	}
	if len(subjects) != 15 || subjects["1"] != 186 {
		t.Errorf("subjects %v", subjects)
	}
}

// The native Pointing'04 layout (names and .txt boxes) gives the same
// samples as labels.csv.
func TestNativePointing04MatchesLabels(t *testing.T) {
	dir := filepath.Join(dataDir(t), "pointing04")
	csv, err := ReadLabels(dir)
	if err != nil {
		t.Fatal(err)
	}
	nat, err := ReadPointing04(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(nat) != len(csv) {
		t.Fatalf("native %d samples, labels.csv %d", len(nat), len(csv))
	}
	for i := range csv {
		a, b := csv[i], nat[i]
		if a.Path != b.Path || a.Subject != b.Subject || a.Series != b.Series || a.Yaw != b.Yaw || a.Pitch != b.Pitch || a.Box != b.Box {
			t.Fatalf("sample %d: labels.csv %+v, native %+v", i, a, b)
		}
	}
}

// The AFLW2000 .mat files give the labels.csv angles and boxes.
func TestNativeAFLWMatchesLabels(t *testing.T) {
	dir := filepath.Join(dataDir(t), "aflw2000")
	csv, err := ReadLabels(dir)
	if err != nil {
		t.Fatal(err)
	}
	nat, err := ReadAFLW2000(filepath.Join(dir, "images"))
	if err != nil {
		t.Fatal(err)
	}
	if len(nat) != len(csv) || len(csv) != 1500 {
		t.Fatalf("native %d samples, labels.csv %d", len(nat), len(csv))
	}
	near := func(a, b, tol float64) bool { return math.Abs(a-b) <= tol }
	inRange := 0
	for i := range csv {
		a, b := csv[i], nat[i]
		if a.Path != b.Path || a.Subject != b.Subject || !b.HasRoll ||
			!near(a.Yaw, b.Yaw, 0.006) || !near(a.Pitch, b.Pitch, 0.006) || !near(a.Roll, b.Roll, 0.006) ||
			!near(a.Box.X, b.Box.X, 0.006) || !near(a.Box.W, b.Box.W, 0.006) || a.InRange != b.InRange {
			t.Fatalf("sample %d: labels.csv %+v, .mat %+v", i, a, b)
		}
		if a.InRange {
			inRange++
		}
	}
	t.Logf("%d of %d within ±99°", inRange, len(csv))
}

func TestParseMATErrors(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"short", make([]byte, 50)},
		{"no header", make([]byte, 200)},
	} {
		if _, err := parseMAT(c.data); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	good, err := os.ReadFile(filepath.Join(dataDir(t), "aflw2000", "images", "image00002.mat"))
	if err != nil {
		t.Fatal(err)
	}
	for n := 128; n < len(good); n += 37 {
		if _, err := parseAFLW(good[:n]); err == nil {
			t.Fatalf("truncated to %d bytes: no error", n)
		}
	}
}

func FuzzParseMAT(f *testing.F) {
	good, err := os.ReadFile(filepath.Join(dataDir(f), "aflw2000", "images", "image00002.mat"))
	if err != nil {
		// Without a real file there is no seed and nothing would run.
		if os.Getenv("CI") == "true" {
			f.Fatalf("CI=true and no seed for the MAT parser: %v", err)
		}
		f.Skipf("no seed for the MAT parser: %v", err)
	}
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		parseMAT(data) // must not panic
	})
}

// A data set that labels only some angles reads with the others unknown,
// not zero; a row with no angle at all, or a malformed angle, is an error
// that names its line.
func TestPartialLabels(t *testing.T) {
	const csv = "path,subject,yaw,pitch,x,y,w,h\n" +
		"a.jpg,1,30,,10,10,50,50\n" +
		"b.jpg,2,,-12.5,10,10,50,50\n"
	s, err := parseLabels(strings.NewReader(csv), "d", "cars")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := s[0].Angle("yaw"); !ok || v != 30 {
		t.Errorf("a.jpg yaw %v %v, want 30 labelled", v, ok)
	}
	for _, c := range []struct {
		i    int
		name string
	}{{0, "pitch"}, {0, "roll"}, {1, "yaw"}, {1, "roll"}} {
		if _, ok := s[c.i].Angle(c.name); ok {
			t.Errorf("%s: %s is labelled, want unlabelled", s[c.i].Path, c.name)
		}
	}
	if v, ok := s[1].Angle("pitch"); !ok || v != -12.5 {
		t.Errorf("b.jpg pitch %v %v, want -12.5 labelled", v, ok)
	}
	for _, bad := range []struct{ csv, want string }{
		{"path,subject,yaw,pitch,x,y,w,h\na.jpg,1,,,10,10,50,50\n", "line 2: a.jpg labels no angle"},
		{"path,subject,yaw,x,y,w,h\na.jpg,1,left,10,10,50,50\n", `line 2: yaw "left" is not a number`},
		{"path,subject,x,y,w,h\na.jpg,1,10,10,50,50\n", "no yaw, pitch or roll column"},
	} {
		_, err := parseLabels(strings.NewReader(bad.csv), "d", "cars")
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: error %v, want it to say %q", bad.csv, err, bad.want)
		}
	}
}

// A labels.csv path that leaves the data set's folder is refused with its
// line.
func TestLabelsPathStaysInFolder(t *testing.T) {
	for _, p := range []string{"../outside/x.jpg", "/etc/passwd", "a/../../b.jpg"} {
		_, err := parseLabels(strings.NewReader("path,subject,yaw,pitch,x,y,w,h\n"+p+",1,0,0,1,1,10,10\n"), "d", "s")
		if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "leaves the data set's folder") {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := parseLabels(strings.NewReader("path,subject,yaw,pitch,x,y,w,h\nimg/a.jpg,1,0,0,1,1,10,10\n"), "d", "s"); err != nil {
		t.Errorf("a path inside the folder: %v", err)
	}
}

// The 3-D landmarks are the ones the box is made from, with a depth.
func TestLandmarks3D(t *testing.T) {
	ss, err := ReadAFLW2000(filepath.Join(dataDir(t), "aflw2000", "images"))
	if err != nil {
		t.Fatal(err)
	}
	s := ss[0]
	lm, err := Landmarks3D(strings.TrimSuffix(s.Path, ".jpg") + ".mat")
	if err != nil {
		t.Fatal(err)
	}
	minX, maxX, minZ, maxZ := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, p := range lm {
		minX, maxX = math.Min(minX, p[0]), math.Max(maxX, p[0])
		minZ, maxZ = math.Min(minZ, p[2]), math.Max(maxZ, p[2])
	}
	if math.Abs(minX-s.Box.X) > 1e-9 || math.Abs(maxX-minX-s.Box.W) > 1e-9 {
		t.Errorf("landmarks span x %.2f–%.2f, box %v", minX, maxX, s.Box)
	}
	// A face is about as deep as it is wide; the nose tip (31) is ahead of the eyes' corners.
	if maxZ-minZ < 0.3*s.Box.W || lm[30][2] <= lm[36][2] || lm[30][2] <= lm[45][2] {
		t.Errorf("depths %.1f–%.1f for a face %.1f wide, nose %.1f, eye corners %.1f %.1f", minZ, maxZ, s.Box.W, lm[30][2], lm[36][2], lm[45][2])
	}
	if _, err := Landmarks3D(filepath.Join(t.TempDir(), "none.mat")); err == nil {
		t.Error("a missing file gave no error")
	}
}

// A made picture names the set it comes from, and counts as that set's.
func TestMadeFromColumn(t *testing.T) {
	ss, err := parseLabels(strings.NewReader("path,subject,yaw,pitch,roll,x,y,w,h,in_range_99,made_from\n"+
		"images/a-y+70.jpg,image00002,70,1,2,10,10,50,50,1,aflw2000\n"), "/d/aflw2000-turned", "aflw2000-turned")
	if err != nil {
		t.Fatal(err)
	}
	if s := ss[0]; s.MadeFrom != "aflw2000" || s.Origin() != "aflw2000" || s.Set != "aflw2000-turned" {
		t.Errorf("made_from read as %q, origin %q, set %q", s.MadeFrom, s.Origin(), s.Set)
	}
	if (Sample{Set: "pointing04"}).Origin() != "pointing04" {
		t.Error("a photograph's origin is not its set")
	}
}

// PointingReading with Faced turns each Pointing'04 face towards its
// mark: the converted angles' head has its nose along the mark's direction (pan about the
// vertical, tilt of elevation) and its ear-to-ear axis level, as a head
// turned about the neck and then nodded has. The reference is the
// geometry, not the composition Faced makes: the nose of Head(yaw, pitch,
// roll) is its third column (rotation.Head(0, t, 0) looks up along −y for
// t > 0, rotation.Head(p, 0, 0) along +x for p > 0), its ear axis the first.
func TestPointingReading(t *testing.T) {
	s, err := Read(filepath.Join(dataDir(t), "pointing04"))
	if err != nil {
		t.Fatal(err)
	}
	raw := append([]Sample(nil), s...)
	other := Sample{Set: "aflw2000", Yaw: 60, Pitch: -30, Roll: 5, HasYaw: true, HasPitch: true, HasRoll: true}
	s = append(s, other)
	yawOnly := append([]Sample(nil), s...)
	PointingReading(s, Faced)
	PointingReading(yawOnly, FacedYaw)
	if s[len(s)-1] != other || yawOnly[len(s)-1] != other {
		t.Errorf("an AFLW2000 face was converted: %+v, %+v", s[len(s)-1], yawOnly[len(s)-1])
	}
	rad := math.Pi / 180
	worst, kept := 0.0, 0
	for i, x := range s[:len(raw)] {
		pan, tilt := raw[i].Yaw, raw[i].Pitch
		if x.Reading != Faced || !x.HasRoll {
			t.Fatalf("%s: not read as faced: %+v", x.Path, x)
		}
		// Its yaw alone, the tilt kept as pitch, no roll.
		if y := yawOnly[i]; y.Reading != FacedYaw || y.HasRoll || y.Yaw != x.Yaw || y.Pitch != tilt {
			t.Fatalf("%s: faced-yaw read %+v, want the faced yaw %g and the tilt %g, no roll", x.Path, y, x.Yaw, tilt)
		}
		r := rotationHead(x.Yaw, x.Pitch, x.Roll)
		nose := [3]float64{r[0][2], r[1][2], r[2][2]}
		want := [3]float64{math.Sin(pan*rad) * math.Cos(tilt*rad), -math.Sin(tilt * rad), math.Cos(pan*rad) * math.Cos(tilt*rad)}
		for k := range 3 {
			worst = math.Max(worst, math.Abs(nose[k]-want[k]))
		}
		// The ear axis stays level (at tilt ±90 pan is 0 and it is too).
		worst = math.Max(worst, math.Abs(r[1][0]))
		if pan == 0 || tilt == 0 {
			// One of them 0: the angles are the file name's.
			if math.Abs(x.Yaw-pan) > 1e-6 || math.Abs(x.Pitch-tilt) > 1e-6 || x.Roll != 0 {
				t.Errorf("%s: pan %g, tilt %g read as yaw %g, pitch %g, roll %g", x.Path, pan, tilt, x.Yaw, x.Pitch, x.Roll)
			}
			kept++
		}
	}
	if worst > 1e-6 {
		t.Errorf("a converted head is %g off its mark's direction or its ear axis off level", worst)
	}
	if kept != 2*15*(13+6+2) { // 15 persons, 2 series: tilt 0 (13 pans), pan 0 (tilts ±15, ±30, ±60), and tilt ±90
		t.Errorf("%d faces kept their angles", kept)
	}
	// A turned and tilted head: pan 60°, tilt −30° (PointingReading's doc).
	one := []Sample{{Set: "pointing04", Yaw: 60, Pitch: -30, HasYaw: true, HasPitch: true}}
	PointingReading(one, Faced)
	if y, p, r := one[0].Yaw, one[0].Pitch, one[0].Roll; math.Abs(y-48.59) > 0.01 || math.Abs(p+49.11) > 0.01 || math.Abs(r+40.89) > 0.01 {
		t.Errorf("pan 60, tilt −30 read as %.2f, %.2f, %.2f; want 48.59, −49.11, −40.89", y, p, r)
	}
	once := one[0]
	PointingReading(one, Faced)
	PointingReading(one, FacedYaw)
	if one[0] != once {
		t.Errorf("read twice, converted twice: %+v, then %+v", once, one[0])
	}
}

// rotationHead is R = Rx(pitch)·Ry(yaw)·Rz(−roll), written out here from
// the axes' rotations so that the test does not take the composition
// from the package it checks.
func rotationHead(yaw, pitch, roll float64) [3][3]float64 {
	rad := math.Pi / 180
	cy, sy := math.Cos(yaw*rad), math.Sin(yaw*rad)
	cp, sp := math.Cos(pitch*rad), math.Sin(pitch*rad)
	cr, sr := math.Cos(-roll*rad), math.Sin(-roll*rad)
	x := [3][3]float64{{1, 0, 0}, {0, cp, -sp}, {0, sp, cp}}
	y := [3][3]float64{{cy, 0, sy}, {0, 1, 0}, {-sy, 0, cy}}
	z := [3][3]float64{{cr, -sr, 0}, {sr, cr, 0}, {0, 0, 1}}
	mul := func(a, b [3][3]float64) (o [3][3]float64) {
		for i := range 3 {
			for j := range 3 {
				for k := range 3 {
					o[i][j] += a[i][k] * b[k][j]
				}
			}
		}
		return o
	}
	return mul(mul(x, y), z)
}

package headpose

import (
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/gllim"
	"github.com/edgepose/posed/infer/pose"
	"github.com/edgepose/posed/train/dataset"
)

// A landmark expert trained on four fifths of AFLW2000's persons reads the
// yaw of the other fifth from the face network's five points alone, with
// a σ that means what it says; fused with a model's answer it follows the
// recorded recipe. Bounds: always answering 0° misses AFLW2000's yaw by
// about 26° on average; the shipped recipe measures 6.3° from the
// canonical boxes (docs/measured.md), from square boxes here it may be a
// little worse: 9°. The σ is scaled on persons held out of its own
// training, so on others its RMS error over RMS σ is near 1: 0.7–1.4.
func TestLandmarkExpertReadsUnseenPersons(t *testing.T) {
	_, aflw := bothSets(t)
	aflw = slices.DeleteFunc(aflw, func(s dataset.Sample) bool { return !s.InRange })
	b, err := NewBank(aflw, BankOptions{NoFeatures: true, Seed: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	all := make([]int, len(b.Samples))
	for i := range all {
		all[i] = i
	}
	trainIdx, testIdx := splitPersons(b, all, 0.2, 9, 1)
	o := DefaultLandmarkOptions()
	o.Outputs, o.Gate, o.Rho, o.Sets = []string{pose.Yaw}, 60, 0.25, []string{"aflw2000", "pointing04"}
	o.PitchRange = 0.95
	m, err := TrainLandmarks(b, trainIdx, o)
	if err != nil {
		t.Fatal(err)
	}
	s := m.Training.Settings
	if s[pose.LandmarkOutputs] != "yaw" || s[pose.LandmarkGate] != "60" || s[pose.LandmarkRho] != "0.25" || feature.CheckLandmarkRecipe(m.Features) != nil {
		t.Errorf("recorded settings %v, recipe %+v", s, m.Features)
	}
	lm := b.landmarkFaces()
	// The pitch gate holds 95 % of the training faces' pitches below it.
	gate, err := strconv.ParseFloat(s[pose.LandmarkPitchGate], 64)
	if err != nil {
		t.Fatalf("pitch gate %q: %v", s[pose.LandmarkPitchGate], err)
	}
	below, n := 0, 0
	for _, i := range trainIdx {
		if lm[i].ok && b.Samples[i].HasPitch {
			n++
			if math.Abs(b.Samples[i].Pitch) < gate+0.01 {
				below++
			}
		}
	}
	if share := float64(below) / float64(n); share < 0.945 || share > 0.96 {
		t.Errorf("pitch gate %g°: %d of %d training faces' |pitch| below it (%.3f), want 0.95", gate, below, n, share)
	}
	read := func(m *gllim.Model) (mae, ratio float64) {
		fw, err := gllim.NewForward(m)
		if err != nil {
			t.Fatal(err)
		}
		pr, pd := fw.NewPredictor(), fw.NewPrediction()
		var sum, se, sv float64
		n := 0
		for _, i := range testIdx {
			if !lm[i].ok {
				continue
			}
			pr.Predict(&pd, lm[i].feat[:])
			e, sd := pd.Mean[0]-b.Samples[i].Yaw, pd.Std(0)*m.Outputs[0].Uncertainty()
			sum += math.Abs(e)
			se += e * e
			sv += sd * sd
			n++
		}
		if n < len(testIdx)*9/10 {
			t.Fatalf("the network read %d of %d held-out faces", n, len(testIdx))
		}
		return sum / float64(n), math.Sqrt(se / sv)
	}
	mae, ratio := read(m)
	t.Logf("landmarks alone on faces of unseen persons: yaw MAE %.2f°, RMS error / RMS σ %.2f", mae, ratio)
	if mae > 9 {
		t.Errorf("yaw MAE %.2f° from the landmarks, want ≤ 9°", mae)
	}
	if ratio < 0.7 || ratio > 1.4 {
		t.Errorf("RMS yaw error / RMS σ %.2f, want 0.7–1.4", ratio)
	}
	// An ensemble of four (-landmark-members): four mixtures in the file,
	// its σ calibrated as one's, and on the same persons no worse than one
	// (through the daemon's path it reads AFLW2000's yaw 0.18° better:
	// docs/measured.md).
	o.Members = 4
	m4, err := TrainLandmarks(b, trainIdx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(m4.Ensemble()) != 4 || m4.Training.Settings["members"] != "4" || m.Training.Settings["members"] != "1" {
		t.Errorf("an expert of %d members, recorded as %q (one: %q)", len(m4.Ensemble()), m4.Training.Settings["members"], m.Training.Settings["members"])
	}
	mae4, ratio4 := read(m4)
	t.Logf("four members: yaw MAE %.2f°, RMS error / RMS σ %.2f", mae4, ratio4)
	if mae4 > mae+0.05 || ratio4 < 0.7 || ratio4 > 1.4 {
		t.Errorf("four members: yaw MAE %.2f° (one: %.2f°), RMS error / RMS σ %.2f", mae4, mae, ratio4)
	}
	// The sets it learns from are the recipe's: none of these is a set of
	// the bank's, and it says so.
	o.Sets = []string{"pointing04"}
	if _, err := TrainLandmarks(b, trainIdx, o); err == nil {
		t.Error("a landmark expert trained on no face")
	}
}

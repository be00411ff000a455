package headpose

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"

	"github.com/edgepose/posed/infer/detect"
	"github.com/edgepose/posed/infer/feature"
)

// detectionsVersion changes whenever what a detector returns for an image
// changes meaning (cascade, clustering), so that older caches are not used.
const detectionsVersion = 1

// detectAll runs d on every image of b, or reads the detections that an
// earlier run with the same images and settings kept in cache (a folder;
// "" keeps nothing). Detection is most of a bank's cost: pigo scans every
// scale of a 450×450 image in about 9 ms.
func detectAll(b *Bank, d *detect.Detector, cache string, progress func(done, total int)) ([][]detect.Face, error) {
	var path string
	if cache != "" {
		key, err := detectionsKey(b, d)
		if err != nil {
			return nil, err
		}
		path = filepath.Join(cache, "detections-"+key+".json")
		if data, err := os.ReadFile(path); err == nil {
			var out [][]detect.Face
			if json.Unmarshal(data, &out) == nil && len(out) == len(b.Samples) {
				return out, nil
			}
		}
	}
	out := make([][]detect.Face, len(b.Samples))
	var (
		mu   sync.Mutex
		done int
	)
	parallel(len(b.Samples), func() func(int) {
		var buf detect.Buffers
		return func(i int) {
			faces := d.DetectInto(&buf, b.Images[i], b.Images[i].Rect)
			out[i] = append([]detect.Face(nil), faces...)
			if progress != nil {
				mu.Lock()
				done++
				progress(done, len(b.Samples))
				mu.Unlock()
			}
		}
	})
	if path != "" {
		data, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("headpose: %w", err)
		}
		if err := writeAtomic(path, data); err != nil {
			return nil, fmt.Errorf("headpose: keeping detections: %w", err)
		}
	}
	return out, nil
}

// detectionsKey identifies the detections of b's images by d: the
// detector's settings and every image's path, size and modification time.
func detectionsKey(b *Bank, d *detect.Detector) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "v%d %+v\n", detectionsVersion, d.Params())
	for _, s := range b.Samples {
		st, err := os.Stat(s.Path)
		if err != nil {
			return "", fmt.Errorf("headpose: %w", err)
		}
		fmt.Fprintf(h, "%s %d %d\n", s.Path, st.Size(), st.ModTime().UnixNano())
	}
	return hex.EncodeToString(h.Sum(nil))[:24], nil
}

func writeAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Detection returns the detection that matches image i's face: its centre
// inside the annotated box and IoU ≥ 0.3 with it (docs/method.md §7), the best by
// IoU. The bank's own detector's results are computed once when the bank
// is made; other detectors' are computed on first use and kept, each
// detector's apart.
func (b *Bank) Detection(i int, d *detect.Detector) (detect.Face, bool) {
	var faces []detect.Face
	if d == b.detector && b.detected != nil {
		faces = b.detected[i]
	} else {
		faces = b.otherDetection(i, d)
	}
	ann := b.Samples[i].Box
	best, bestIoU := detect.Face{}, 0.0
	for _, f := range faces {
		cx, cy := f.Box.Centre()
		if cx < ann.X || cx > ann.X+ann.W || cy < ann.Y || cy > ann.Y+ann.H {
			continue
		}
		if iou := feature.IoU(f.Box, ann); iou >= 0.3 && iou > bestIoU {
			best, bestIoU = f, iou
		}
	}
	return best, bestIoU > 0
}

func (b *Bank) otherDetection(i int, d *detect.Detector) []detect.Face {
	b.detMu.Lock()
	if b.dets == nil {
		b.dets = map[*detect.Detector][][]detect.Face{}
	}
	if b.dets[d] == nil {
		b.dets[d] = make([][]detect.Face, len(b.Samples))
	}
	faces := b.dets[d][i]
	b.detMu.Unlock()
	if faces != nil {
		return faces
	}
	faces = d.Detect(b.Images[i])
	if faces == nil {
		faces = []detect.Face{} // found nothing: known, not "not yet"
	}
	b.detMu.Lock()
	b.dets[d][i] = faces
	b.detMu.Unlock()
	return faces
}

// LearnCalibration finds the mean move from matched detections to the face
// boxes of images idx: centre offset in detector box sides, and the
// geometric mean of the size ratio.
func LearnCalibration(b *Bank, idx []int, d *detect.Detector) (detect.Calibration, int) {
	var dx, dy, ls float64
	n := 0
	found := make([]detect.Face, len(idx))
	ok := make([]bool, len(idx))
	parallel(len(idx), func() func(int) {
		return func(j int) { found[j], ok[j] = b.Detection(idx[j], d) }
	})
	for j, i := range idx {
		if !ok[j] {
			continue
		}
		sh := Back(found[j].Box, b.FaceBox(i))
		dx += sh.DX
		dy += sh.DY
		ls += sh.DS
		n++
	}
	if n == 0 {
		return detect.Identity, 0
	}
	return detect.Calibration{DX: dx / float64(n), DY: dy / float64(n), Scale: math.Exp(ls / float64(n))}, n
}

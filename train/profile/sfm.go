// Package profile makes new pictures of a photographed face turned further
// than it was taken, with a known pose: "face profiling" (X. Zhu, Z. Lei,
// X. Liu, H. Shi, S. Z. Li, "Face Alignment Across Large Poses: A 3D
// Solution", CVPR 2016, §5.1), which made 300W-LP. A 3-D face mesh is
// fitted to a picture's 68 three-dimensional landmarks (AFLW2000-3D's
// pt3d_68), turned about the head's vertical axis, and drawn again with the
// picture's own texture; the background around the head is warped with it
// through a mesh of anchors, so that the face stays in its scene.
//
// The mesh is the Surrey Face Model's mean face (P. Huber, G. Hu, R. Tena,
// P. Mortazavian, W. Koppen, W. Christmas, M. Rätsch, J. Kittler, "A
// Multiresolution 3D Morphable Face Model and Fitting Framework", VISAPP
// 2016), free for non-commercial use: pictures made with it, and models
// trained on them, inherit that term (as AFLW2000's already do).
// docs/profiling.md describes the method and what it gets wrong.
package profile

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Mesh is the reference face: its vertices in millimetres (x to the image's
// right for a frontal face, which is the face's left; y up; z toward the
// viewer), its triangles, and the correspondences the fit needs.
type Mesh struct {
	V [][3]float64
	T [][3]int32
	// Twin is each vertex's mirror image across the face's plane of
	// symmetry, whose texture stands in where a vertex was hidden.
	Twin []int32
	// Landmark maps the 68 ibug landmarks (0-based) to vertices; −1 where the
	// reference mesh has no such vertex (the jaw line, which depends on the
	// view, and a few points defined only on finer meshes).
	Landmark [68]int
	// Contour holds the vertices of the face's outline from temple to chin:
	// [0] the face's right side (ibug landmarks 1–8), [1] its left (10–17).
	Contour [2][]int

	bnd   []int   // the outline (boundary), found at load
	front float64 // the sign of a front-facing triangle's area (frontSign)
}

// Files of the Surrey Face Model read by LoadSFM, as eos ships them.
const (
	objFile      = "sfm_reference.obj"
	landmarkFile = "ibug_to_sfm.txt"
	contourFile  = "sfm_model_contours.json"
	twinFile     = "sfm_reference_symmetry.txt"
)

// ErrSFM is wrapped by every error reading the face model.
var ErrSFM = errors.New("profile: not a readable face model")

// LoadSFM reads the Surrey Face Model's reference mesh and its landmark,
// contour and symmetry files from dir.
func LoadSFM(dir string) (*Mesh, error) {
	m := &Mesh{}
	if err := m.readOBJ(filepath.Join(dir, objFile)); err != nil {
		return nil, err
	}
	if err := m.readLandmarks(filepath.Join(dir, landmarkFile)); err != nil {
		return nil, err
	}
	if err := m.readContours(filepath.Join(dir, contourFile)); err != nil {
		return nil, err
	}
	if err := m.readTwins(filepath.Join(dir, twinFile)); err != nil {
		return nil, err
	}
	m.bnd, m.front = m.boundary(), m.frontSign()
	return m, nil
}

func (m *Mesh) readOBJ(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSFM, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		fs := strings.Fields(sc.Text())
		if len(fs) == 0 {
			continue
		}
		switch fs[0] {
		case "v":
			if len(fs) < 4 {
				return fmt.Errorf("%w: %s:%d: a vertex needs 3 coordinates", ErrSFM, path, line)
			}
			var v [3]float64
			for i := range v {
				if v[i], err = strconv.ParseFloat(fs[i+1], 64); err != nil {
					return fmt.Errorf("%w: %s:%d: %v", ErrSFM, path, line, err)
				}
			}
			m.V = append(m.V, v)
		case "f":
			if len(fs) != 4 {
				return fmt.Errorf("%w: %s:%d: only triangles are read", ErrSFM, path, line)
			}
			var t [3]int32
			for i := range t {
				idx, _, _ := strings.Cut(fs[i+1], "/")
				n, err := strconv.Atoi(idx)
				if err != nil || n < 1 {
					return fmt.Errorf("%w: %s:%d: bad vertex index %q", ErrSFM, path, line, fs[i+1])
				}
				t[i] = int32(n - 1)
			}
			m.T = append(m.T, t)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrSFM, path, err)
	}
	if len(m.V) == 0 || len(m.T) == 0 {
		return fmt.Errorf("%w: %s has no vertices or no triangles", ErrSFM, path)
	}
	for i, t := range m.T {
		for _, v := range t {
			if int(v) >= len(m.V) {
				return fmt.Errorf("%w: %s: triangle %d names vertex %d of %d", ErrSFM, path, i+1, v+1, len(m.V))
			}
		}
	}
	return nil
}

// readLandmarks reads the [landmark_mappings] table: "ibug = vertex" lines,
// both counted from 1 and 0 respectively as eos writes them.
func (m *Mesh) readLandmarks(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSFM, err)
	}
	for i := range m.Landmark {
		m.Landmark[i] = -1
	}
	in, found := false, 0
	for n, l := range strings.Split(string(data), "\n") {
		l, _, _ = strings.Cut(l, "#")
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "[") {
			in = l == "[landmark_mappings]"
			continue
		}
		if !in || l == "" {
			continue
		}
		a, b, ok := strings.Cut(l, "=")
		ib, err1 := strconv.Atoi(strings.TrimSpace(a))
		v, err2 := strconv.Atoi(strings.TrimSpace(b))
		if !ok || err1 != nil || err2 != nil || ib < 1 || ib > 68 || v < 0 {
			return fmt.Errorf("%w: %s:%d: want \"landmark = vertex\", got %q", ErrSFM, path, n+1, l)
		}
		if v < len(m.V) { // finer meshes' vertices are not on the reference
			m.Landmark[ib-1] = v
			found++
		}
	}
	if found < 20 {
		return fmt.Errorf("%w: %s maps %d landmarks to the mesh, want at least 20", ErrSFM, path, found)
	}
	return nil
}

func (m *Mesh) readContours(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSFM, err)
	}
	var c struct {
		Model struct {
			Right []int `json:"right_contour"`
			Left  []int `json:"left_contour"`
		} `json:"model_contour"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrSFM, path, err)
	}
	m.Contour = [2][]int{c.Model.Right, c.Model.Left}
	for side, vs := range m.Contour {
		if len(vs) < 2 {
			return fmt.Errorf("%w: %s: contour %d has %d vertices", ErrSFM, path, side, len(vs))
		}
		for _, v := range vs {
			if v < 0 || v >= len(m.V) {
				return fmt.Errorf("%w: %s: contour vertex %d not on the mesh", ErrSFM, path, v)
			}
		}
	}
	return nil
}

// readTwins reads one 1-based vertex index per line, the twin of the line's
// own vertex.
func (m *Mesh) readTwins(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSFM, err)
	}
	for n, l := range strings.Split(string(data), "\n") {
		l, _, _ = strings.Cut(l, "#")
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		v, err := strconv.Atoi(l)
		if err != nil || v < 1 || v > len(m.V) {
			return fmt.Errorf("%w: %s:%d: %q is not a vertex", ErrSFM, path, n+1, l)
		}
		m.Twin = append(m.Twin, int32(v-1))
	}
	if len(m.Twin) != len(m.V) {
		return fmt.Errorf("%w: %s has %d twins for %d vertices", ErrSFM, path, len(m.Twin), len(m.V))
	}
	return nil
}

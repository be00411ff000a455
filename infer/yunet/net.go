// Package yunet finds faces with a small convolutional network of the
// YuNet family (W. Wu, H. Peng, S. Yu, "YuNet: A Tiny Millisecond-level
// Face Detector", Machine Intelligence Research 20, 2023): the weights of
// libfacedetection (github.com/ShiqiYu/libfacedetection, 3-clause BSD,
// weights/LICENSE), run by posed's own Go from the network's description.
//
// The network, on a picture padded to a multiple of 32 pixels:
//
//	head: 3×3 stride-2 convolution, 16 channels, ReLU           (stride 2)
//	one DP unit 16→16, 2×2 max pool                              (stride 4)
//	two DP² units 16→32, 32→64                                   (stride 4)
//	2×2 max pool, DP² 64→64: level 8;  pool, DP² 64→64: level 16;
//	pool, DP² 64→64: level 32
//	neck, coarse to fine: DP on level 32; level 16 += ×2 nearest
//	upsampling of it, DP; level 8 += upsampled level 16, DP
//	heads on each level (DP without ReLU): class (1), box (4),
//	objectness (1), five landmarks (10)
//
// where a DP unit is a point-wise 1×1 convolution followed by a depth-wise
// 3×3 one (zero padding) and ReLU, and DP² is two of them. Each cell of a
// level of stride s at row r, column c is one anchor at (c·s, r·s); its
// box is centred at the anchor plus s·(dx, dy), of size s·exp(dw) by
// s·exp(dh), and its confidence is √(σ(class)·σ(objectness)). Boxes are
// kept above a confidence and overlapping ones suppressed, best first
// (IoU > 0.45).
//
// posed's frames are grey: the head convolution's weights for the three
// colour channels are summed, which is exactly the network on a picture
// whose blue, green and red are all the grey value.
package yunet

import (
	"image"
	"math"
	"slices"
)

// Net is the network ready to run; it is read-only and may be shared.
type Net struct {
	head  [9 * 16]float32 // the head convolution on grey, [tap][out]
	headB [16]float32
	// The backbone's and the neck's layers (below clsLayer): point-wise
	// weights transposed to [in][out], depth-wise ones as in the file
	// ([tap][channel]).
	w [clsLayer][]float32
	b [clsLayer][]float32
	// The four heads of each level as one DP unit of 16 channels (class,
	// box 4, objectness, landmarks 10: headChannels), point-wise
	// transposed [64][16] and depth-wise [tap][16]: the convolutions are
	// per output channel, so the heads side by side are the heads.
	headPW, headDW [3][]float32
	headPB, headDB [3][]float32
}

// The heads' channels in a level's output: class, box (dx, dy, dw, dh),
// objectness, landmarks (x, y of five points).
const (
	headCls      = 0
	headBox      = 1
	headObj      = 5
	headKps      = 6
	headChannels = 16
)

// New prepares weights (Weights.Check must pass) to run.
func New(ws *Weights) *Net {
	n := &Net{}
	l0 := ws.Layers[0]
	for o := range 16 {
		for tap := range 9 {
			var s float32
			for c := range 3 { // blue, green, red of the tap
				s += l0.W[o*32+tap*3+c]
			}
			n.head[tap*16+o] = s
		}
		n.headB[o] = l0.B[o]
	}
	// The backbone and the neck; the heads follow, fused.
	for i := 1; i < clsLayer; i++ {
		l, lw := Arch[i], ws.Layers[i]
		n.b[i] = slices.Clone(lw.B)
		if l.Depthwise {
			n.w[i] = slices.Clone(lw.W)
			continue
		}
		n.w[i] = make([]float32, l.In*l.Out)
		for o := range l.Out {
			for c := range l.In {
				n.w[i][c*l.Out+o] = lw.W[o*l.In+c]
			}
		}
	}
	for l := range 3 {
		pw, dw := make([]float32, 64*headChannels), make([]float32, 9*headChannels)
		pb, db := make([]float32, headChannels), make([]float32, headChannels)
		at := 0
		for _, first := range [4]int{clsLayer, boxLayer, objLayer, kpsLayer} {
			p, d := ws.Layers[first+2*l], ws.Layers[first+2*l+1]
			k := Arch[first+2*l].Out
			for o := range k { // point-wise: [out][in] in the file, [in][out] here
				for c := range 64 {
					pw[c*headChannels+at+o] = p.W[o*64+c]
				}
			}
			for tap := range 9 {
				copy(dw[tap*headChannels+at:tap*headChannels+at+k], d.W[tap*k:tap*k+k])
			}
			copy(pb[at:at+k], p.B)
			copy(db[at:at+k], d.B)
			at += k
		}
		n.headPW[l], n.headDW[l], n.headPB[l], n.headDB[l] = pw, dw, pb, db
	}
	return n
}

// Face is a detection, in the frame's pixels.
type Face struct {
	X, Y, W, H float64 // box: top-left corner and size
	Score      float64 // confidence in [0, 1]
	// Landmarks: right eye, left eye, nose tip, right and left mouth
	// corners (as the person sees them: the right eye is on the picture's
	// left), x then y.
	Landmarks [10]float64
}

// Buffers hold one run's intermediate results; reused, a run allocates
// nothing once they have grown to the largest picture seen.
type Buffers struct {
	work  [2][]float32
	lvl   [3][]float32 // levels 8, 16, 32
	out   [3][]float32 // each level's heads (headChannels per cell)
	cand  []Face
	keep  []Face
	small image.Gray // DetectShrunk's picture
}

// Levels are the neck's outputs of the last run (Forward) at strides 8,
// 16 and 32: rows×cols cells of 64 channels each, channels innermost,
// for a picture padded to a multiple of 32. They are valid until the
// next run on b.
func (b *Buffers) Levels() [3][]float32 { return b.lvl }

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// Levels' strides.
var strides = [3]int{8, 16, 32}

// The first layer of each level's DP units in the neck, and of each
// head's for level 0 (the next levels follow by 2).
const (
	neckLayer = 23
	clsLayer  = 29
	boxLayer  = 35
	objLayer  = 41
	kpsLayer  = 47
)

// Detect runs the network on the part r of img (clipped to img) and
// returns the faces whose confidence is at least minScore, best first,
// in img's coordinates. The slice is reused by the next call with buf.
func (n *Net) Detect(buf *Buffers, img *image.Gray, r image.Rectangle, minScore float64) []Face {
	r = r.Intersect(img.Rect)
	if r.Empty() {
		return buf.keep[:0]
	}
	n.Forward(buf, img, r)
	return n.decode(buf, r, minScore)
}

// DetectShrunk is Detect on the part r of img shrunk k times in each
// direction (the mean of each k×k block): a scan of the whole frame at a
// lower cost, for faces of k times the sizes the network finds. Boxes and
// landmarks are in img's coordinates.
func (n *Net) DetectShrunk(buf *Buffers, img *image.Gray, r image.Rectangle, k int, minScore float64) []Face {
	r = r.Intersect(img.Rect)
	if k <= 1 || r.Dx() < k || r.Dy() < k {
		return n.Detect(buf, img, r, minScore)
	}
	w, h := r.Dx()/k, r.Dy()/k
	if cap(buf.small.Pix) < w*h {
		buf.small.Pix = make([]uint8, w*h)
	}
	small := &buf.small
	small.Pix, small.Stride, small.Rect = small.Pix[:w*h], w, image.Rect(0, 0, w, h)
	shrink(small, img, r.Min, k)
	faces := n.Detect(buf, small, small.Rect, minScore)
	fk := float64(k)
	for i := range faces {
		f := &faces[i]
		f.X, f.Y, f.W, f.H = f.X*fk+float64(r.Min.X), f.Y*fk+float64(r.Min.Y), f.W*fk, f.H*fk
		for j := range f.Landmarks {
			o := r.Min.X
			if j%2 == 1 {
				o = r.Min.Y
			}
			f.Landmarks[j] = f.Landmarks[j]*fk + float64(o)
		}
	}
	return faces
}

// shrink fills dst with the means of the k×k blocks of src from at
// (rounded half up).
func shrink(dst, src *image.Gray, at image.Point, k int) {
	w, h := dst.Rect.Dx(), dst.Rect.Dy()
	kk := uint32(k * k)
	base := (at.Y-src.Rect.Min.Y)*src.Stride + at.X - src.Rect.Min.X
	for y := range h {
		out := dst.Pix[y*dst.Stride : y*dst.Stride+w]
		if k == 2 { // the scan's: two rows at a time
			r0 := src.Pix[base+2*y*src.Stride:][:2*w]
			r1 := src.Pix[base+(2*y+1)*src.Stride:][:2*w]
			for x := range out {
				s := uint32(r0[2*x]) + uint32(r0[2*x+1]) + uint32(r1[2*x]) + uint32(r1[2*x+1])
				out[x] = uint8((s + 2) / 4)
			}
			continue
		}
		for x := range out {
			var s uint32
			for dy := range k {
				row := src.Pix[base+(y*k+dy)*src.Stride+x*k:][:k]
				for _, v := range row {
					s += uint32(v)
				}
			}
			out[x] = uint8((s + kk/2) / kk)
		}
	}
}

// Forward runs the network on the part r of img (within img) and leaves
// each level's heads in buf.out.
func (n *Net) Forward(buf *Buffers, img *image.Gray, r image.Rectangle) {
	w, h := r.Dx(), r.Dy()
	// The picture padded to a multiple of 32; level sizes.
	pw, ph := (w+31)/32*32, (h+31)/32*32
	c2, r2 := pw/2, ph/2
	c4, r4 := pw/4, ph/4
	big := max(c2*r2*16, c4*r4*64)
	a := grow(buf.work[0], big)
	b := grow(buf.work[1], big)
	buf.work[0], buf.work[1] = a, b

	headConv(a, b, img, r, r2, c2, &n.head, &n.headB)
	n.dp(b, a, a, 1, r2, c2, true) // a → a (b is scratch)
	maxPool(b, a, r2, c2, 16)      // b: stride 4, 16 channels
	n.dp(a, b, b, 3, r4, c4, true)
	n.dp(a, b, b, 5, r4, c4, true) // 32 channels
	n.dp(a, b, b, 7, r4, c4, true)
	n.dp(a, b, b, 9, r4, c4, true) // 64 channels
	rows, cols := r4, c4
	src := b
	for l := range 3 {
		rows, cols = rows/2, cols/2
		buf.lvl[l] = grow(buf.lvl[l], rows*cols*64)
		dst := buf.lvl[l]
		maxPool(dst, src, rows*2, cols*2, 64)
		n.dp(a, dst, dst, 11+4*l, rows, cols, true)
		n.dp(a, dst, dst, 13+4*l, rows, cols, true)
		src = dst
	}
	// Neck and heads, coarse to fine.
	for l := 2; l >= 0; l-- {
		rows, cols := ph/strides[l], pw/strides[l]
		lv := buf.lvl[l]
		if l < 2 {
			upAdd(lv, buf.lvl[l+1], rows, cols, 64)
		}
		n.dp(a, lv, lv, neckLayer+2*l, rows, cols, true)
		buf.out[l] = grow(buf.out[l], rows*cols*headChannels)
		m := rows * cols
		pointwise(a[:m*headChannels], lv[:m*64], 64, headChannels, n.headPW[l], n.headPB[l], false)
		depthwise(buf.out[l], a[:m*headChannels], rows, cols, headChannels, n.headDW[l], n.headDB[l], false)
	}
}

// dp runs the point-wise layer i then the depth-wise layer i+1 on src
// (rows×cols cells) into dst, through scratch; dst may be src.
func (n *Net) dp(scratch, dst, src []float32, i, rows, cols int, relu bool) {
	p, d := Arch[i], Arch[i+1]
	pointwise(scratch[:rows*cols*p.Out], src[:rows*cols*p.In], p.In, p.Out, n.w[i], n.b[i], false)
	depthwise(dst[:rows*cols*d.Out], scratch[:rows*cols*p.Out], rows, cols, d.Out, n.w[i+1], n.b[i+1], relu)
}

// headConv is the head convolution on grey: out(r, c) = ReLU(b + Σ_tap
// w[tap]·img(2r+dy, 2c+dx)), pixels outside r being 0 (the network's
// padding), for rows×cols cells of 16 channels. The 3×3 windows are laid
// out in scratch (9 per cell), then convolved point-wise.
func headConv(out, scratch []float32, img *image.Gray, r image.Rectangle, rows, cols int, wt *[9 * 16]float32, b *[16]float32) {
	win := scratch[:rows*cols*9]
	w, h := r.Dx(), r.Dy()
	base := (r.Min.Y-img.Rect.Min.Y)*img.Stride + r.Min.X - img.Rect.Min.X
	for y := range rows {
		cells := win[y*cols*9 : (y+1)*cols*9]
		// Cells whose window lies within r: x from 1 while 2x+1 < w.
		inner := y >= 1 && 2*y+1 < h
		for x := range cols {
			px := cells[x*9 : x*9+9]
			if inner && x >= 1 && 2*x+1 < w {
				p := img.Pix[base+(2*y-1)*img.Stride+2*x-1:]
				q := img.Pix[base+(2*y)*img.Stride+2*x-1:]
				u := img.Pix[base+(2*y+1)*img.Stride+2*x-1:]
				px[0], px[1], px[2] = float32(p[0]), float32(p[1]), float32(p[2])
				px[3], px[4], px[5] = float32(q[0]), float32(q[1]), float32(q[2])
				px[6], px[7], px[8] = float32(u[0]), float32(u[1]), float32(u[2])
				continue
			}
			for tap := range px {
				sy, sx := 2*y+tap/3-1, 2*x+tap%3-1
				if sy < 0 || sx < 0 || sy >= h || sx >= w {
					px[tap] = 0
					continue
				}
				px[tap] = float32(img.Pix[base+sy*img.Stride+sx])
			}
		}
	}
	pointwise(out, win, 9, 16, wt[:], b[:], true)
}

// maxPool is the 2×2 stride-2 max pool of src (rows×cols cells of ch
// channels; rows and cols even) into dst.
func maxPool(dst, src []float32, rows, cols, ch int) {
	oc := cols / 2
	if simd && ch%8 == 0 {
		for y := range rows / 2 {
			poolRowVec(dst[y*oc*ch:(y+1)*oc*ch], src[2*y*cols*ch:(2*y+1)*cols*ch], src[(2*y+1)*cols*ch:(2*y+2)*cols*ch], oc, ch)
		}
		return
	}
	for y := range rows / 2 {
		for x := range oc {
			o := dst[(y*oc+x)*ch : (y*oc+x+1)*ch]
			p := src[((2*y)*cols+2*x)*ch:]
			q := src[((2*y+1)*cols+2*x)*ch:]
			for c := range o {
				o[c] = max(p[c], p[ch+c], q[c], q[ch+c])
			}
		}
	}
}

// upAdd adds to fine (rows×cols cells) the coarse level of half its size,
// each coarse cell repeated 2×2 (nearest-neighbour upsampling).
func upAdd(fine, coarse []float32, rows, cols, ch int) {
	cc := cols / 2
	for y := range rows {
		for x := range cols {
			f := fine[(y*cols+x)*ch : (y*cols+x+1)*ch]
			g := coarse[((y/2)*cc+x/2)*ch:]
			for c := range f {
				f[c] += g[c]
			}
		}
	}
}

// nmsIoU is the overlap above which the lesser of two boxes is dropped.
const nmsIoU = 0.45

// maxCandidates bounds the boxes that enter suppression (the best ones).
const maxCandidates = 1000

// decode turns the heads into boxes (package comment), keeps those with a
// confidence of at least minScore and suppresses overlaps.
func (n *Net) decode(buf *Buffers, r image.Rectangle, minScore float64) []Face {
	pw, ph := (r.Dx()+31)/32*32, (r.Dy()+31)/32*32
	cand := buf.cand[:0]
	for l, s := range strides {
		rows, cols := ph/s, pw/s
		out := buf.out[l]
		fs := float64(s)
		for i := range rows * cols {
			h := out[i*headChannels : (i+1)*headChannels]
			conf := math.Sqrt(sigmoid(h[headCls]) * sigmoid(h[headObj]))
			if !(conf >= minScore) {
				continue
			}
			ax, ay := float64(i%cols)*fs, float64(i/cols)*fs
			bx, kps := h[headBox:headBox+4], h[headKps:headKps+10]
			cx, cy := float64(bx[0])*fs+ax, float64(bx[1])*fs+ay
			bw, bh := math.Exp(float64(bx[2]))*fs, math.Exp(float64(bx[3]))*fs
			f := Face{X: cx - bw/2 + float64(r.Min.X), Y: cy - bh/2 + float64(r.Min.Y), W: bw, H: bh, Score: conf}
			for k := range 5 {
				f.Landmarks[2*k] = float64(kps[2*k])*fs + ax + float64(r.Min.X)
				f.Landmarks[2*k+1] = float64(kps[2*k+1])*fs + ay + float64(r.Min.Y)
			}
			cand = append(cand, f)
		}
	}
	// Best first; equal scores keep their order (finer levels first).
	slices.SortStableFunc(cand, func(a, b Face) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	if len(cand) > maxCandidates {
		cand = cand[:maxCandidates]
	}
	keep := buf.keep[:0]
	for _, c := range cand {
		ok := true
		for _, k := range keep {
			if iou(c, k) > nmsIoU {
				ok = false
				break
			}
		}
		if ok {
			keep = append(keep, c)
		}
	}
	buf.cand, buf.keep = cand, keep
	return keep
}

// sigmoid is 1/(1+e^−v), its argument clamped to ±88.38 as the reference
// does (float32's exp range).
func sigmoid(v float32) float64 {
	x := min(max(float64(v), -88.3762626647949), 88.3762626647949)
	return 1 / (1 + math.Exp(-x))
}

// iou is the overlap of two boxes: intersection over union.
func iou(a, b Face) float64 {
	ix := min(a.X+a.W, b.X+b.W) - max(a.X, b.X)
	iy := min(a.Y+a.H, b.Y+b.H) - max(a.Y, b.Y)
	if ix <= 0 || iy <= 0 {
		return 0
	}
	in := ix * iy
	return in / (a.W*a.H + b.W*b.H - in)
}

package device

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"image"
	_ "image/jpeg" // replayed images
	_ "image/png"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"time"
	"unsafe"

	"github.com/edgepose/posed/internal/regular"
)

// ReplayOptions configure a replay.
type ReplayOptions struct {
	FPS  float64 // pace; 0: as fast as the caller takes frames
	Loop bool    // start again after the last frame
	// Unpaced, with FPS set, delivers the frames as fast as the caller
	// takes them but stamps them FPS apart (from the first frame's time):
	// a recording analysed faster than it was made, with its own timing.
	Unpaced bool
	// Width, Height, if set, are the frame size every frame must have;
	// otherwise the size most frames' headers give is. A frame of another
	// size gives ErrFrameSize, one that cannot be decoded ErrBadFrame, both
	// before it is decoded where its header tells, and the replay goes on
	// with the next.
	Width, Height int
}

// Replay plays back a folder of images (sorted by name), an MJPEG file
// (concatenated JPEGs) or a YUV4MPEG2 (.y4m) file as grey frames.
type Replay struct {
	path   string
	o      ReplayOptions
	frames []frameData
	next   int
	seq    uint64
	start  time.Time
	w, h   int
	// release unmaps a mapped video file (frames point into it) of
	// mapped bytes.
	release func() error
	mapped  int
	base    uintptr   // the mapping's first byte
	modTime time.Time // the file's when it was mapped
}

// frameData is one frame: a file of a folder, read when it is due (file
// set), or held encoded (a JPEG of an MJPEG file) or raw (Y4M luma).
type frameData struct {
	name string
	file string // an image file, read at Next
	enc  []byte // JPEG bytes, or nil
	y    []byte // raw luma (Y4M)
	w, h int    // from the header (0: unreadable)
	hdr  error  // why the header could not be read
}

// maxMappedFile bounds the video file a replay maps (a 32-bit board's
// address space is the limit that matters).
const maxMappedFile = 1 << 30

// headerBytes bounds what is read of an image file for its header: JPEG's
// frame header follows at most 64 KB of EXIF and other segments.
const headerBytes = 1 << 20

// maxFrameFile bounds the bytes of one image file of a folder: a grey
// frame of the expected size compresses far below this, so a larger file
// is refused unread.
func maxFrameFile(w, h int) int64 { return 8*int64(w)*int64(h) + 1<<20 }

// OpenReplay opens path (a folder, .mjpeg/.mjpg, or .y4m). A folder's
// images are read one at a time when they are due (only their headers at
// open, to learn the frame size), so a huge or hostile file costs no
// memory unless its header matches; a video file is mapped (up to 1 GiB),
// not copied: the kernel pages it in and out, and a file cut short while
// it is replayed is an error of Next (the source is then re-opened), not a
// crash.
func OpenReplay(path string, o ReplayOptions) (*Replay, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("device: replay: %w", err)
	}
	r := &Replay{path: path, o: o, w: o.Width, h: o.Height}
	// The scan of a mapped file at open reads all of it: a file rewritten
	// in place meanwhile (as cp does) faults there as in Next.
	err = r.guarded(func() error {
		var err error
		switch ext := strings.ToLower(filepath.Ext(path)); {
		case st.IsDir():
			err = r.readDir()
		case ext == ".mjpeg" || ext == ".mjpg":
			err = r.readMJPEG()
		case ext == ".y4m":
			err = r.readY4M()
		default:
			err = fmt.Errorf("%w: %s: want a folder of images, an .mjpeg or a .y4m file", ErrFormat, path)
		}
		if err == nil && len(r.frames) > 0 && r.w == 0 {
			r.w, r.h = r.commonSize()
		}
		return err
	})
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("device: replay: %w", err)
	}
	if len(r.frames) == 0 {
		r.Close()
		return nil, fmt.Errorf("device: replay: %s holds no frames", path)
	}
	return r, nil
}

// commonSize returns the frame size that most frames' headers give (0×0
// if none can be read): one odd image, even sorted first, does not decide
// what every other frame is measured against.
func (r *Replay) commonSize() (int, int) {
	count := map[image.Point]int{}
	best, n := image.Point{}, 0
	for i := range r.frames {
		f := &r.frames[i]
		if f.enc != nil && f.w == 0 {
			if cfg, _, err := image.DecodeConfig(bytes.NewReader(f.enc)); err == nil {
				f.w, f.h = cfg.Width, cfg.Height
			}
		}
		if f.w <= 0 || f.h <= 0 {
			continue
		}
		p := image.Pt(f.w, f.h)
		count[p]++
		if count[p] > n {
			best, n = p, count[p]
		}
	}
	return best.X, best.Y
}

func (r *Replay) readDir() error {
	entries, err := os.ReadDir(r.path)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".jpg", ".jpeg", ".png":
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		f := frameData{name: n, file: filepath.Join(r.path, n)}
		fh, err := regular.Open(f.file)
		if err != nil {
			// Not a picture one can read (gone, a FIFO, a folder): a bad
			// frame, dropped and logged when its turn comes.
			f.hdr = err
			r.frames = append(r.frames, f)
			continue
		}
		cfg, _, err := image.DecodeConfig(bufio.NewReader(io.LimitReader(fh, headerBytes)))
		fh.Close()
		if err != nil {
			f.hdr = err
		} else {
			f.w, f.h = cfg.Width, cfg.Height
		}
		r.frames = append(r.frames, f)
	}
	return nil
}

// readFrameFile reads a folder's image file once its header has been found
// to match the frame size, refusing files too large for such a frame.
func (r *Replay) readFrameFile(f frameData, want image.Point) ([]byte, error) {
	if f.hdr != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFrame, f.hdr)
	}
	if err := checkHeaderSize(f.w, f.h, want); err != nil {
		return nil, err
	}
	fh, err := regular.Open(f.file)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFrame, err)
	}
	defer fh.Close()
	limit := maxFrameFile(f.w, f.h)
	if want.X > 0 && want.Y > 0 {
		limit = maxFrameFile(want.X, want.Y)
	}
	st, err := fh.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFrame, err)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%w: a file of %d bytes for a %d×%d frame (at most %d)", ErrBadFrame, st.Size(), f.w, f.h, limit)
	}
	// The file may have changed since: read no more than the limit.
	data, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadFrame, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: a file of more than %d bytes for a %d×%d frame", ErrBadFrame, limit, f.w, f.h)
	}
	return data, nil
}

func (r *Replay) readMJPEG() error {
	data, release, err := mapFile(r.path)
	if err != nil {
		return err
	}
	r.setMapping(data, release)
	i := 0
	splitJPEGs(data, func(j []byte) bool {
		i++
		r.frames = append(r.frames, frameData{name: fmt.Sprintf("frame %d", i), enc: j})
		return true
	})
	return nil
}

// readY4M reads a YUV4MPEG2 stream: a header line "YUV4MPEG2 W… H… …",
// then frames, each "FRAME[ params]\n" followed by the planes. Only the Y
// plane is kept; the chroma size follows from the C parameter.
func (r *Replay) readY4M() error {
	data, release, err := mapFile(r.path)
	if err != nil {
		return err
	}
	r.setMapping(data, release)
	w, h, chroma, rest, err := parseY4MHeader(data)
	if err != nil {
		return err
	}
	frameLen := w*h + chroma
	for i := 1; len(rest) > 0; i++ {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 || !bytes.HasPrefix(rest, []byte("FRAME")) {
			return fmt.Errorf("%w: y4m frame %d has no FRAME header", ErrFormat, i)
		}
		rest = rest[nl+1:]
		if len(rest) < frameLen {
			break // a truncated last frame is dropped
		}
		r.frames = append(r.frames, frameData{name: fmt.Sprintf("frame %d", i), y: rest[:w*h], w: w, h: h})
		rest = rest[frameLen:]
	}
	return nil
}

// parseY4MHeader returns the frame size, the bytes of chroma per frame and
// what follows the header.
func parseY4MHeader(data []byte) (w, h, chroma int, rest []byte, err error) {
	nl := bytes.IndexByte(data, '\n')
	if nl < 0 || !bytes.HasPrefix(data, []byte("YUV4MPEG2 ")) {
		return 0, 0, 0, nil, fmt.Errorf("%w: not a YUV4MPEG2 stream", ErrFormat)
	}
	cs := "420"
	for _, f := range strings.Fields(string(data[10:nl])) {
		switch f[0] {
		case 'W':
			fmt.Sscan(f[1:], &w)
		case 'H':
			fmt.Sscan(f[1:], &h)
		case 'C':
			cs = f[1:]
		}
	}
	if w <= 0 || h <= 0 || w > 16384 || h > 16384 {
		return 0, 0, 0, nil, fmt.Errorf("%w: y4m size %d×%d", ErrFormat, w, h)
	}
	cw, ch := (w+1)/2, (h+1)/2
	switch {
	case strings.HasPrefix(cs, "420"):
		chroma = 2 * cw * ch
	case strings.HasPrefix(cs, "422"):
		chroma = 2 * cw * h
	case strings.HasPrefix(cs, "444"):
		chroma = 2 * w * h
	case strings.HasPrefix(cs, "mono"):
		chroma = 0
	default:
		return 0, 0, 0, nil, fmt.Errorf("%w: y4m colour space %q", ErrFormat, cs)
	}
	return w, h, chroma, data[nl+1:], nil
}

// Next delivers the next frame, paced to FPS. At the end it returns ErrEnd,
// or starts again when looping. A frame that cannot be decoded or has the
// wrong size gives an error naming it; the next call goes on after it.
func (r *Replay) Next(ctx context.Context, dst *Frame) error {
	return r.guarded(func() error { return r.next1(ctx, dst) })
}

// guarded runs fn, which may read a mapped file: if the file was cut short
// meanwhile (SIGBUS on a page past its end), it returns an error saying so
// instead of crashing.
func (r *Replay) guarded(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		p := recover()
		if p == nil {
			return
		}
		// A fault at an address inside the mapping: the file was cut
		// short under it (it may have been written back to its size by
		// now, as cp does). Emulators report such faults without an
		// address: then a file no longer the size or the modification
		// time it had when mapped is the test. Anything else is a bug:
		// let it crash.
		re, isRuntime := p.(runtime.Error)
		if r.release == nil || !isRuntime {
			panic(p)
		}
		var addr uintptr
		if a, ok := re.(interface{ Addr() uintptr }); ok {
			addr = a.Addr()
		}
		inside := addr >= r.base && addr < r.base+uintptr(r.mapped)
		if addr == 0 {
			st, serr := os.Stat(r.path)
			inside = serr != nil || st.Size() != int64(r.mapped) || !st.ModTime().Equal(r.modTime)
		}
		if !inside {
			panic(p)
		}
		err = fmt.Errorf("device: replay %s: the file changed while it was replayed: %v", r.path, p)
	}()
	return fn()
}

// setMapping records the mapped file's bytes and how to unmap them.
func (r *Replay) setMapping(data []byte, release func() error) {
	r.release, r.mapped = release, len(data)
	r.base = uintptr(unsafe.Pointer(unsafe.SliceData(data)))
	if st, err := os.Stat(r.path); err == nil {
		r.modTime = st.ModTime()
	}
}

// next1 is Next without the guard.
func (r *Replay) next1(ctx context.Context, dst *Frame) (err error) {
	if r.next >= len(r.frames) {
		if !r.o.Loop {
			return ErrEnd
		}
		r.next = 0
	}
	if r.start.IsZero() {
		r.start = time.Now()
	}
	var due time.Time
	if r.o.FPS > 0 {
		due = r.start.Add(time.Duration(float64(r.seq) / r.o.FPS * float64(time.Second)))
	}
	if r.o.FPS > 0 && !r.o.Unpaced {
		if wait := time.Until(due); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			case <-t.C:
			}
		}
	} else if err = ctx.Err(); err != nil {
		return err
	}
	f := r.frames[r.next]
	r.next++
	r.seq++
	want := image.Pt(r.w, r.h)
	if f.file != "" {
		f.enc, err = r.readFrameFile(f, want)
	}
	switch {
	case err != nil:
	case f.y != nil:
		err = copyPlane(dst, f.y, f.w, f.w, f.h)
	case len(f.enc) > 1 && f.enc[0] == 0xff && f.enc[1] == 0xd8:
		err = GreyFromJPEG(dst, f.enc, want)
	default:
		var img image.Image
		var cfg image.Config
		if cfg, _, err = image.DecodeConfig(bytes.NewReader(f.enc)); err != nil {
			err = fmt.Errorf("%w: %v", ErrBadFrame, err)
		} else if err = checkHeaderSize(cfg.Width, cfg.Height, want); err == nil {
			if img, _, err = image.Decode(bytes.NewReader(f.enc)); err != nil {
				err = fmt.Errorf("%w: %v", ErrBadFrame, err)
			}
		}
		if err == nil {
			b := img.Bounds()
			g := setSize(dst, b.Dx(), b.Dy())
			for y := 0; y < b.Dy(); y++ {
				for x := 0; x < b.Dx(); x++ {
					r, gg, bb, _ := img.At(b.Min.X+x, b.Min.Y+y).RGBA()
					g.Pix[y*g.Stride+x] = uint8((19595*r + 38470*gg + 7471*bb + 1<<15) >> 24)
				}
			}
		}
	}
	if err != nil {
		return fmt.Errorf("device: replay %s: %s: %w", r.path, f.name, err)
	}
	dst.Seq = r.seq
	dst.Time = time.Now()
	if r.o.FPS > 0 && r.o.Unpaced {
		dst.Time = due
	}
	w, h := dst.Gray.Rect.Dx(), dst.Gray.Rect.Dy()
	if r.w == 0 {
		r.w, r.h = w, h
	}
	if w != r.w || h != r.h {
		return fmt.Errorf("device: replay %s: %s: %w", r.path, f.name, sizeError(fmt.Sprintf("%d×%d", w, h), fmt.Sprintf("%d×%d", r.w, r.h)))
	}
	return nil
}

// Close releases the frames.
func (r *Replay) Close() error {
	r.frames = nil
	if r.release != nil {
		err := r.release()
		r.release = nil
		return err
	}
	return nil
}

var _ Source = (*Replay)(nil)

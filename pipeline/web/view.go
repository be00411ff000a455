package web

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgepose/posed/infer/annotate"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/pipeline/frame"
)

// View makes annotated JPEGs of the processed frames for people who
// watch: the live stream (/live), snapshots (/snapshot.jpg and the MQTT
// snapshot command). The frame loop only offers frames; while nobody
// watches that is one atomic load, and while someone does it is a copy of
// the grey pixels at most MaxFPS times a second, never a wait: drawing and
// encoding happen in the view's own goroutine, and a frame offered while
// it is busy is skipped.
type View struct {
	MaxFPS  float64 // frames a second at most (default 5)
	Quality int     // JPEG quality (default 80)
	// MaxStreams bounds the live streams at once (default 4); WriteTimeout
	// is how long one frame may take to reach a viewer before the stream
	// is dropped (default 10 s): a viewer that stops reading is not held.
	MaxStreams   int32
	WriteTimeout time.Duration

	watchers atomic.Int32 // live streams and snapshot requests waiting
	streams  atomic.Int32 // live streams
	work     chan struct{}

	liveMu sync.Mutex
	live   []*stream // the live streams, oldest first

	mu      sync.Mutex
	busy    bool // the encoder has a frame
	last    time.Time
	gray    *image.Gray
	faces   []annotate.Face
	jpeg    []byte
	seq     uint64        // number of the latest JPEG
	updated chan struct{} // closed (and replaced) at each new JPEG
	off     error         // why there is no picture (detection off), or nil
}

// NewView returns a view whose encoder runs until ctx ends.
func NewView(ctx context.Context) *View {
	v := &View{MaxFPS: 5, Quality: 80, MaxStreams: 4, WriteTimeout: 10 * time.Second, work: make(chan struct{}, 1), updated: make(chan struct{})}
	go v.encode(ctx)
	return v
}

// Offer hands the view a processed frame and its faces as published. It
// returns at once; the view copies the frame only if someone watches, the
// rate cap allows and the encoder is free. The axes are drawn from the
// camera's angles (raw_* where a neutral pose made the published ones
// relative): they must match the head in the picture.
func (v *View) Offer(img *image.Gray, faces []message.Face) {
	if v == nil || v.watchers.Load() == 0 {
		return
	}
	now := time.Now()
	v.mu.Lock()
	if v.busy || v.off != nil || now.Sub(v.last) < time.Duration(float64(time.Second)/v.MaxFPS) {
		v.mu.Unlock()
		return
	}
	v.busy, v.last = true, now
	w, h := img.Rect.Dx(), img.Rect.Dy()
	if v.gray == nil || v.gray.Rect.Dx() != w || v.gray.Rect.Dy() != h {
		v.gray = image.NewGray(image.Rect(0, 0, w, h))
	}
	for y := 0; y < h; y++ {
		o := img.PixOffset(img.Rect.Min.X, img.Rect.Min.Y+y)
		copy(v.gray.Pix[y*v.gray.Stride:y*v.gray.Stride+w], img.Pix[o:o+w])
	}
	v.faces = v.faces[:0]
	for i := range faces {
		v.faces = append(v.faces, drawn(&faces[i]))
	}
	v.mu.Unlock()
	v.work <- struct{}{} // capacity 1, and busy was false: never blocks
}

// drawn is what the view draws of a published face.
func drawn(f *message.Face) annotate.Face {
	b := f.Box
	d := annotate.Face{Box: feature.Box{X: b[0], Y: b[1], W: b[2] - b[0], H: b[3] - b[1]}, ID: f.Track,
		Target: f.Target.Name, State: f.Attention, Dwell: f.Dwell.V, HasDwell: f.Dwell.Set,
		Points: f.Landmarks, HasPoints: f.Landmarks != [5][2]float64{}}
	for a, n := range [3][2]message.Num{{f.Yaw, f.RawYaw}, {f.Pitch, f.RawPitch}, {f.Roll, f.RawRoll}} {
		if n[1].Set {
			n[0] = n[1]
		}
		d.Angles[a], d.Has[a] = n[0].V, n[0].Set
	}
	return d
}

// Off stops the pictures (privacy: detection switched off) and forgets
// the last one; watchers are told why. Off(nil) lets them come again.
func (v *View) Off(why error) {
	if v == nil {
		return
	}
	v.mu.Lock()
	v.off = why
	if why != nil {
		v.jpeg = nil
		close(v.updated)
		v.updated = make(chan struct{})
	}
	v.mu.Unlock()
}

// encode draws and encodes offered frames.
func (v *View) encode(ctx context.Context) {
	var rgba *image.RGBA
	var buf bytes.Buffer
	for {
		select {
		case <-ctx.Done():
			return
		case <-v.work:
		}
		// Offer does not touch gray or faces while busy is set.
		rgba = annotate.Grey(rgba, v.gray)
		annotate.Faces(rgba, v.faces)
		buf.Reset()
		err := jpeg.Encode(&buf, rgba, &jpeg.Options{Quality: v.Quality})
		v.mu.Lock()
		v.busy = false
		if err == nil && v.off == nil {
			v.jpeg = append([]byte(nil), buf.Bytes()...)
			v.seq++
			close(v.updated)
			v.updated = make(chan struct{})
		}
		v.mu.Unlock()
	}
}

// latest returns the newest JPEG, its number, the channel closed at the
// next one, and why there is none while the view is off.
func (v *View) latest() ([]byte, uint64, chan struct{}, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.jpeg, v.seq, v.updated, v.off
}

// ErrNoFrame: no frame was processed in time for a snapshot (the camera
// is offline, or the view is off).
var ErrNoFrame = errors.New("no processed frame")

// Snapshot returns an annotated JPEG of a frame processed after the call,
// waiting for one until ctx ends.
func (v *View) Snapshot(ctx context.Context) ([]byte, error) {
	v.watchers.Add(1)
	defer v.watchers.Add(-1)
	_, since, ch, off := v.latest()
	for {
		if off != nil {
			return nil, off
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %v", ErrNoFrame, ctx.Err())
		}
		var j []byte
		var seq uint64
		j, seq, ch, off = v.latest()
		if j != nil && seq > since {
			return j, nil
		}
	}
}

// liveSendBuffer is the send buffer a live stream's connection gets:
// about two frames. With the kernel's own (up to 4 MB) a viewer that
// never reads took frames for a minute before its write blocked, holding
// its slot all that time (#55); now it stalls within a few frames, and a
// new viewer takes its slot (admit).
const liveSendBuffer = 64 << 10

// shrinkSendBuffer gives the connection of r, where it is a TCP
// connection served by posed's server (connKey), liveSendBuffer to send
// from.
func shrinkSendBuffer(r *http.Request) {
	c, _ := r.Context().Value(connKey{}).(net.Conn)
	if lc, ok := c.(*limitedConn); ok {
		c = lc.Conn
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(liveSendBuffer)
	}
}

// liveBoundary separates the parts of the MJPEG stream.
const liveBoundary = "posedframe"

// stream is a live viewer: its response, and since when (unix ns) its
// frame being written has waited (0: not writing).
type stream struct {
	rc      *http.ResponseController
	writing atomic.Int64
	evicted atomic.Bool // its slot was given to a new viewer: it ends
}

// stallAfter is how long a frame may wait to leave before its viewer
// counts as stalled: it gives its slot to a new viewer (a healthy one
// takes a frame in milliseconds).
const stallAfter = time.Second

// admit gives st a stream slot: a free one, or that of the oldest stalled
// viewer, whose write is cut short (slow readers held every slot, and a
// viewer who came next got nothing). It reports whether st got one.
func (v *View) admit(st *stream) bool {
	v.liveMu.Lock()
	defer v.liveMu.Unlock()
	if int32(len(v.live)) >= v.MaxStreams {
		victim := -1
		now := time.Now().UnixNano()
		for i, o := range v.live {
			if w := o.writing.Load(); w != 0 && now-w > int64(stallAfter) {
				victim = i
				break
			}
		}
		if victim < 0 {
			return false
		}
		v.live[victim].evicted.Store(true)
		v.live[victim].rc.SetWriteDeadline(time.Now()) // its blocked write fails now
		v.live = slices.Delete(v.live, victim, victim+1)
		v.streams.Add(-1)
	}
	v.live = append(v.live, st)
	v.streams.Add(1)
	return true
}

// leave frees st's slot (if it was not given away).
func (v *View) leave(st *stream) {
	v.liveMu.Lock()
	defer v.liveMu.Unlock()
	if i := slices.Index(v.live, st); i >= 0 {
		v.live = slices.Delete(v.live, i, i+1)
		v.streams.Add(-1)
	}
}

// ServeLive streams the annotated frames as multipart/x-mixed-replace
// JPEGs (an MJPEG stream browsers show in an <img>), until the client goes.
func (v *View) ServeLive(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	st := &stream{rc: rc}
	if !v.admit(st) {
		http.Error(w, fmt.Sprintf("%d live viewers already: try later", v.MaxStreams), http.StatusServiceUnavailable)
		return
	}
	defer v.leave(st)
	shrinkSendBuffer(r)
	v.watchers.Add(1)
	defer v.watchers.Add(-1)
	w.Header().Set("Content-Type", "multipart/x-mixed-replace; boundary="+liveBoundary)
	w.Header().Set("Cache-Control", "no-store")
	var sent uint64
	for {
		j, seq, ch, off := v.latest()
		if off != nil {
			if sent == 0 {
				http.Error(w, off.Error(), http.StatusServiceUnavailable)
			}
			return
		}
		if j != nil && seq != sent {
			sent = seq
			// Each frame has WriteTimeout to leave (the server's own
			// write timeout would end the stream after a while).
			st.writing.Store(time.Now().UnixNano())
			if st.evicted.Load() || rc.SetWriteDeadline(time.Now().Add(v.WriteTimeout)) != nil {
				return
			}
			if _, err := fmt.Fprintf(w, "--%s\r\nContent-Type: image/jpeg\r\nContent-Length: %s\r\n\r\n", liveBoundary, strconv.Itoa(len(j))); err != nil {
				return
			}
			if _, err := w.Write(j); err != nil {
				return
			}
			if _, err := w.Write([]byte("\r\n")); err != nil {
				return
			}
			if rc.Flush() != nil || st.evicted.Load() {
				return
			}
			st.writing.Store(0)
		}
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		}
	}
}

// ServeSnapshot answers one annotated JPEG of a frame processed within
// three seconds of the request, or 503 saying why there is none.
func (v *View) ServeSnapshot(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	j, err := v.Snapshot(ctx)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "image/jpeg")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(j)
}

// Frame offers the frame and its faces as published to the live view
// (frame.Stage).
func (v *View) Frame(f *frame.Frame) { v.Offer(f.Image, f.Faces) }

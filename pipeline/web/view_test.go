package pipeline

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/jpeg"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/edgepose/posed/device"
	"github.com/edgepose/posed/infer/feature"
	"github.com/edgepose/posed/infer/track"
	"github.com/edgepose/posed/publish"
)

// flowSource delivers textured w×h frames every period until ctx ends.
type flowSource struct {
	w, h   int
	period time.Duration
	seq    uint64
	noise  bool // frames of noise (large JPEGs) instead of gradients
}

func (s *flowSource) Next(ctx context.Context, f *device.Frame) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(s.period):
	}
	if f.Gray == nil || f.Gray.Rect.Dx() != s.w {
		f.Gray = image.NewGray(image.Rect(0, 0, s.w, s.h))
	}
	s.seq++
	x := uint32(s.seq) | 1
	for i := range f.Gray.Pix {
		if s.noise {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			f.Gray.Pix[i] = uint8(x)
		} else {
			f.Gray.Pix[i] = uint8(i + int(s.seq))
		}
	}
	f.Seq, f.Time = s.seq, time.Now()
	return nil
}

// oneFace reports one face with a box and a pose on every frame.
type oneFace struct{}

func (oneFace) Process(*image.Gray) []track.Face {
	return []track.Face{{ID: 7, Box: feature.Box{X: 100, Y: 60, W: 80, H: 80}, Angles: [3]float64{30, 10, 0}, Has: [3]bool{true, true, true}}}
}
func (oneFace) Timing() track.Timing { return track.Timing{} }

type nopPublisher struct{}

func (nopPublisher) Pose(publish.PoseMsg)   {}
func (nopPublisher) Retain(string, any)     {}
func (nopPublisher) Stats(publish.StatsMsg) {}
func (nopPublisher) NoFaces()               {}

// runFlow runs a loop on a flowing source with a view and serves its
// HTTP handler; it returns the server and the view.
func runFlow(t *testing.T) (*httptest.Server, *View) {
	ctx, cancel := context.WithCancel(context.Background())
	view := NewView(ctx)
	met := NewMetrics()
	l := &Loop{Source: &flowSource{w: 320, h: 240, period: 20 * time.Millisecond}, Tracker: oneFace{}, Publisher: nopPublisher{}, Metrics: met, View: view}
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	srv := httptest.NewServer(met.Handler(time.Second, "test", func() PageInfo { return PageInfo{Device: "cam"} }, view))
	t.Cleanup(func() { srv.Close(); cancel(); <-done })
	return srv, view
}

// The live stream is multipart JPEGs of the processed frames, annotated,
// at most MaxFPS a second; a snapshot is one of them.
func TestLiveView(t *testing.T) {
	srv, _ := runFlow(t)
	resp, err := http.Get(srv.URL + "/live")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/x-mixed-replace" {
		t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
	}
	mr := multipart.NewReader(resp.Body, params["boundary"])
	start := time.Now()
	for i := 0; i < 4; i++ {
		part, err := mr.NextPart()
		if err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		if part.Header.Get("Content-Type") != "image/jpeg" {
			t.Errorf("part %d: %v", i, part.Header)
		}
		img, err := jpeg.Decode(part)
		if err != nil {
			t.Fatalf("part %d is not a JPEG: %v", i, err)
		}
		if b := img.Bounds(); b.Dx() != 320 || b.Dy() != 240 {
			t.Errorf("part %d is %v, want 320×240", i, b)
		}
		// The face's box is drawn in green on the grey frame.
		r, g, bl, _ := img.At(100, 100).RGBA()
		if g < r+0x3000 || g < bl+0x3000 {
			t.Errorf("part %d: no green box edge at (100, 100): %x %x %x", i, r, g, bl)
		}
	}
	// Four parts at 5 a second take at least 0.6 s (frames come at 50).
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("4 parts in %v: the rate cap of 5 a second is not kept", d)
	}
	sresp, err := http.Get(srv.URL + "/snapshot.jpg")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(sresp.Body)
	sresp.Body.Close()
	if _, err := jpeg.Decode(bytes.NewReader(body)); sresp.StatusCode != 200 || err != nil {
		t.Errorf("/snapshot.jpg: %d, %v", sresp.StatusCode, err)
	}
	presp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(presp.Body)
	presp.Body.Close()
	if !strings.Contains(string(page), `<img src="/live"`) {
		t.Errorf("/ does not show the live view:\n%s", page)
	}
}

// Switched off (privacy), the view gives no picture and says why; on
// again, pictures come back. Without frames a snapshot waits, then fails.
func TestViewOff(t *testing.T) {
	srv, view := runFlow(t)
	why := errors.New("detection is off")
	view.Off(why)
	for _, path := range []string{"/snapshot.jpg", "/live"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "detection is off") {
			t.Errorf("%s while off: %d %s", path, resp.StatusCode, body)
		}
	}
	view.Off(nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := view.Snapshot(ctx); err != nil {
		t.Errorf("snapshot after switching on: %v", err)
	}
	idle := NewView(context.Background())
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	if _, err := idle.Snapshot(ctx2); !errors.Is(err, ErrNoFrame) {
		t.Errorf("snapshot without frames: %v", err)
	}
}

// BenchmarkProcessView: what one processed 640×480 frame costs the frame
// loop without a viewer and with one (the copy handed to the encoder), the
// tracker being a stub so that only the loop's own work is timed.
func BenchmarkProcessView(b *testing.B) {
	for _, watched := range []bool{false, true} {
		name := "nobody-watching"
		if watched {
			name = "viewer"
		}
		b.Run(name, func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			view := NewView(ctx)
			view.MaxFPS = 1e9 // offer every frame the encoder is free for
			if watched {
				view.watchers.Add(1)
			}
			l := &Loop{Tracker: oneFace{}, Publisher: nopPublisher{}, Metrics: NewMetrics(), View: view}
			l.free = nil
			f := &device.Frame{Gray: image.NewGray(image.Rect(0, 0, 640, 480)), Time: time.Now()}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l.process(f)
				l.free = l.free[:0]
			}
		})
	}
}

// BenchmarkOfferAccepted: what the frame loop pays for a frame the view
// takes (the encoder free, someone watching): the copy of a 640×480 grey
// frame and its faces. At the 5 fps cap this is paid 5 times a second.
func BenchmarkOfferAccepted(b *testing.B) {
	v := &View{MaxFPS: 1e9, Quality: 80, work: make(chan struct{}, 1), updated: make(chan struct{})}
	v.watchers.Add(1)
	img := image.NewGray(image.Rect(0, 0, 640, 480))
	faces := oneFace{}.Process(img)
	b.ReportAllocs()
	for b.Loop() {
		v.Offer(img, faces)
		<-v.work // no encoder: take the frame and free the view again
		v.mu.Lock()
		v.busy = false
		v.mu.Unlock()
	}
}

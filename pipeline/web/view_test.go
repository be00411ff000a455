package web

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

	"github.com/edgepose/posed/message"
	"github.com/edgepose/posed/pipeline/metrics"
)

// feed offers the view a textured w×h frame with one face every period,
// as the frame loop does, and counts it in met, until ctx ends.
func feed(ctx context.Context, view *View, met *metrics.Metrics, w, h int, period time.Duration, noise bool) chan error {
	done := make(chan error, 1)
	img := image.NewGray(image.Rect(0, 0, w, h))
	faces := []message.Face{{Track: 7, Box: [4]float64{100, 60, 180, 140}, Yaw: message.Some(30), Pitch: message.Some(10), Roll: message.Some(0)}}
	go func() {
		t := time.NewTicker(period)
		defer t.Stop()
		for seq := 1; ; seq++ {
			select {
			case <-ctx.Done():
				done <- ctx.Err()
				return
			case <-t.C:
			}
			x := uint32(seq) | 1
			for i := range img.Pix {
				if noise {
					x ^= x << 13
					x ^= x >> 17
					x ^= x << 5
					img.Pix[i] = uint8(x)
				} else {
					img.Pix[i] = uint8(i + seq)
				}
			}
			view.Offer(img, faces)
			met.FramesProcessed.Add(1)
			met.LastFrame.Store(time.Now().UnixNano())
		}
	}()
	return done
}

// runFlow feeds a view with frames and serves its HTTP handler; it returns
// the server and the view.
func runFlow(t *testing.T) (*httptest.Server, *View) {
	ctx, cancel := context.WithCancel(context.Background())
	view := NewView(ctx)
	met := metrics.New(metrics.Sources{})
	done := feed(ctx, view, met, 320, 240, 20*time.Millisecond, false)
	srv := httptest.NewServer(Handler(met, time.Second, "test", func() PageInfo { return PageInfo{Device: "cam"} }, view))
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

// BenchmarkOfferAccepted: what the frame loop pays for a frame the view
// takes (the encoder free, someone watching): the copy of a 640×480 grey
// frame and its faces. At the 5 fps cap this is paid 5 times a second.
func BenchmarkOfferAccepted(b *testing.B) {
	v := &View{MaxFPS: 1e9, Quality: 80, work: make(chan struct{}, 1), updated: make(chan struct{})}
	v.watchers.Add(1)
	img := image.NewGray(image.Rect(0, 0, 640, 480))
	faces := []message.Face{{Track: 7, Box: [4]float64{100, 60, 180, 140}, Yaw: message.Some(30), Pitch: message.Some(10), Roll: message.Some(0)}}
	b.ReportAllocs()
	for b.Loop() {
		v.Offer(img, faces)
		<-v.work // no encoder: take the frame and free the view again
		v.mu.Lock()
		v.busy = false
		v.mu.Unlock()
	}
}

// The view draws a face where it is and turned as the camera sees it: the
// box's corners back to a box, and the camera's angles (raw_*) where a
// neutral pose made the published ones relative.
func TestDrawnFace(t *testing.T) {
	f := message.Face{Track: 3, Box: [4]float64{10, 20, 110, 140}, Yaw: message.Some(5), RawYaw: message.Some(30),
		Pitch: message.Some(-4), RawPitch: message.Some(2)}
	d := drawn(&f)
	if d.Box.X != 10 || d.Box.Y != 20 || d.Box.W != 100 || d.Box.H != 120 || d.ID != 3 {
		t.Errorf("box %+v, id %d", d.Box, d.ID)
	}
	if d.Angles != [3]float64{30, 2, 0} || d.Has != [3]bool{true, true, false} {
		t.Errorf("angles %v %v, want the camera's 30, 2 and no roll", d.Angles, d.Has)
	}
}

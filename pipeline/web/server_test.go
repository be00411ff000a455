package web

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgepose/posed/pipeline/metrics"
)

// serveFlow is runFlow's frames and view behind StartHTTP with limits.
// Its frames are noise, shown at 50 a second: megabytes a second that a
// viewer who stops reading soon cannot take.
func serveFlow(t *testing.T, l HTTPLimits) (string, *View, *HTTPServer) {
	ctx, cancel := context.WithCancel(context.Background())
	view := NewView(ctx)
	view.WriteTimeout, view.MaxFPS, view.Quality = 300*time.Millisecond, 50, 100
	met := metrics.NewMetrics()
	done := feed(ctx, view, met, 640, 480, 20*time.Millisecond, true)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := StartHTTP(ln, Handler(met, time.Second, "test", func() PageInfo { return PageInfo{Device: "cam"} }, view), view, l)
	t.Cleanup(func() {
		sctx, c := context.WithTimeout(context.Background(), time.Second)
		defer c()
		srv.Shutdown(sctx)
		cancel()
		<-done
	})
	return "http://" + ln.Addr().String(), view, srv
}

// Idle connections are closed after the idle and header timeouts;
// connections beyond the cap wait unserved (holding no descriptor of
// posed's) and are served once others close. (Before: 3000 idle
// keep-alives stayed open for good, 3013 descriptors.)
func TestHTTPIdleAndConnectionCap(t *testing.T) {
	l := HTTPLimits{Conns: 4, Idle: 200 * time.Millisecond, Header: 200 * time.Millisecond, Request: time.Second, Write: time.Second}
	url, _, _ := serveFlow(t, l)
	addr := strings.TrimPrefix(url, "http://")
	var idle []net.Conn
	for range 4 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	// A fifth client waits while the four hold every slot.
	start := time.Now()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Errorf("served in %v with all %d connections held: no cap", waited, l.Conns)
	}
	for i, c := range idle {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("idle connection %d: %v, want closed by the server", i, err)
		}
		c.Close()
	}
}

// A viewer that stops reading is dropped after the view's write timeout;
// viewers beyond MaxStreams are refused; a shutdown (a reload) ends the
// streams at once instead of waiting for them. (Before: 300 viewers that
// never read were held forever, and /live froze across a reload.)
func TestLiveStreamsBounded(t *testing.T) {
	url, view, srv := serveFlow(t, DefaultHTTPLimits())
	addr := strings.TrimPrefix(url, "http://")
	// A viewer that never reads: its stream must end.
	// (a small receive window, set before connecting, so that the
	// server's writes block soon instead of filling megabytes of buffers)
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048) })
	}}
	stuck, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	fmt.Fprintf(stuck, "GET /live HTTP/1.1\r\nHost: x\r\n\r\n")
	deadline := time.Now().Add(10 * time.Second)
	for view.streams.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for view.streams.Load() > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := view.streams.Load(); n != 0 {
		t.Fatalf("a viewer that never reads is still held (%d streams)", n)
	}

	ended := make(chan struct{}, view.MaxStreams)
	for range view.MaxStreams {
		resp, err := http.Get(url + "/live")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("viewer refused: %v", err)
		}
		go func() {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			ended <- struct{}{}
		}()
	}
	resp, err := http.Get(url + "/live")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("viewer %d: status %d, want 503", view.MaxStreams+1, resp.StatusCode)
	}
	// A reload shuts the server down: the streams end at once.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
	if d := time.Since(start); d > time.Second {
		t.Errorf("shutdown took %v with %d viewers", d, view.MaxStreams)
	}
	for i := range view.MaxStreams {
		select {
		case <-ended:
		case <-time.After(2 * time.Second):
			t.Fatalf("%d of %d streams still open after the shutdown", view.MaxStreams-int32(i), view.MaxStreams)
		}
	}
}

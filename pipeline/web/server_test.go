package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgepose/posed/internal/wait"
	"github.com/edgepose/posed/pipeline/metrics"
)

// serveFlow is runFlow's frames and view behind StartHTTP with limits.
// Its frames are noise, shown at 50 a second: megabytes a second that a
// viewer who stops reading soon cannot take.
func serveFlow(t *testing.T, l HTTPLimits) (string, *View, *HTTPServer) {
	return serveFlowWith(t, l, nil)
}

// serveFlowWith is serveFlow with the view then set by set (before any
// frame).
func serveFlowWith(t *testing.T, l HTTPLimits, set func(*View)) (string, *View, *HTTPServer) {
	ctx, cancel := context.WithCancel(context.Background())
	view := NewView(ctx)
	view.WriteTimeout, view.MaxFPS, view.Quality = 300*time.Millisecond, 50, 100
	if set != nil {
		set(view)
	}
	met := metrics.New(metrics.Sources{})
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

// Idle connections are closed after the idle and header timeouts; a
// connection beyond the cap takes the place of the oldest one that is not
// being served, which the server closes. (Before: 3000 idle keep-alives
// stayed open for good, 3013 descriptors; then a fifth client waited for
// a slot while four silent ones held them.)
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
	time.Sleep(50 * time.Millisecond) // all four accepted
	// A fifth client is served at once: the oldest silent one gives way.
	start := time.Now()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if waited := time.Since(start); waited > 150*time.Millisecond {
		t.Errorf("served in %v with all %d connections held by silent clients", waited, l.Conns)
	}
	for i, c := range idle {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("idle connection %d: %v, want closed by the server", i, err)
		}
		c.Close()
	}
}

// A slowloris of 300 connections that send their request a byte at a
// time leaves /healthz answered at once (it went unanswered for 3 s), with
// the default limits.
func TestHealthUnderSlowloris(t *testing.T) {
	url, _, _ := serveFlow(t, DefaultHTTPLimits())
	addr := strings.TrimPrefix(url, "http://")
	var slow []net.Conn
	defer func() {
		for _, c := range slow {
			c.Close()
		}
	}()
	for range 300 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n") // never ends its headers
		slow = append(slow, c)
	}
	time.Sleep(100 * time.Millisecond)
	for i := range 5 {
		start := time.Now()
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url + "/healthz")
		if err != nil {
			t.Fatalf("/healthz %d under a slowloris: %v", i, err)
		}
		resp.Body.Close()
		if took := time.Since(start); took > time.Second || resp.StatusCode != 200 {
			t.Errorf("/healthz %d under a slowloris: %d in %v", i, resp.StatusCode, took)
		}
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
	wait.Until(10*time.Second, func() bool { return view.streams.Load() > 0 })
	wait.Until(10*time.Second, func() bool { return view.streams.Load() == 0 })
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

// Viewers that stop reading hold every stream slot for at most
// stallAfter: a viewer who comes next takes the slot of the oldest
// stalled one and gets frames at once (with 300 slow readers, a viewer
// got none for the whole write timeout).
func TestStalledViewersGiveWay(t *testing.T) {
	url, view, _ := serveFlow(t, DefaultHTTPLimits())
	view.WriteTimeout = 10 * time.Second // without giving way, a slot frees after this
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048) })
	}}
	idleViewers(t, &d, url, view)
	// Their writes block once the socket buffers are full: wait for a
	// stall as long as the write timeout lets one last.
	stalled := func() bool {
		view.liveMu.Lock()
		defer view.liveMu.Unlock()
		for _, st := range view.live {
			if w := st.writing.Load(); w != 0 && time.Since(time.Unix(0, w)) > stallAfter {
				return true
			}
		}
		return false
	}
	wait.For(t, 8*time.Second, "a viewer stalled (the test's slow readers read if none does)", stalled)
	start := time.Now()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url + "/live")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("a viewer after %d stalled ones: status %d", view.MaxStreams, resp.StatusCode)
	}
	buf := make([]byte, 64<<10)
	got := 0
	for got < 1000 && time.Since(start) < 3*time.Second {
		n, err := resp.Body.Read(buf)
		got += n
		if err != nil {
			break
		}
	}
	if got < 1000 {
		t.Errorf("the new viewer got %d bytes in %v", got, time.Since(start))
	}
	if n := view.streams.Load(); n > view.MaxStreams {
		t.Errorf("%d streams, more than %d", n, view.MaxStreams)
	}
}

// Viewers that open /live and never read, with the kernel's own receive
// buffers, give way to a real viewer within seconds: a live stream's
// connection sends from a buffer of two frames, so a reader that does
// not read stalls at once (before: the kernel's send buffer, up to 4 MB,
// took a minute of frames first, and a real viewer was refused for about
// 60 s: #55).
func TestIdleViewersGiveWay(t *testing.T) {
	url, view, _ := serveFlowWith(t, DefaultHTTPLimits(), func(v *View) {
		v.MaxFPS, v.Quality, v.WriteTimeout = 5, 80, 60*time.Second // as posed serves it; a slot would free after a minute
	})
	idleViewers(t, &net.Dialer{}, url, view)
	start := time.Now()
	served := func() bool {
		resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(url + "/live")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		n, _ := io.ReadAtLeast(resp.Body, make([]byte, 1000), 1000)
		return resp.StatusCode == 200 && n >= 1000
	}
	// 1.2–1.4 s here; 5.6 s with the kernel's own send buffer (noise
	// frames of about 200 KB at 5 a second).
	if !wait.Until(4500*time.Millisecond, served) {
		t.Fatalf("a real viewer was refused for %v after %d idle ones", time.Since(start), view.MaxStreams)
	}
	t.Logf("a real viewer served %v after %d idle ones took every slot", time.Since(start).Round(100*time.Millisecond), view.MaxStreams)
}

// idleViewers opens view.MaxStreams live streams on url through d that
// never read (closed at the test's end), and waits until each holds a
// slot.
func idleViewers(t *testing.T, d *net.Dialer, url string, view *View) {
	t.Helper()
	for range view.MaxStreams {
		c, err := d.Dial("tcp", strings.TrimPrefix(url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		fmt.Fprintf(c, "GET /live HTTP/1.1\r\nHost: x\r\n\r\n") // and never reads
	}
	wait.Until(5*time.Second, func() bool { return view.streams.Load() >= view.MaxStreams })
	if view.streams.Load() != view.MaxStreams {
		t.Fatalf("%d of %d idle viewers streaming", view.streams.Load(), view.MaxStreams)
	}
}

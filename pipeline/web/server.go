// Package web is posed's HTTP side: the page at /, /metrics, /healthz and the
// live view (/live, /snapshot.jpg: annotated frames, drawn only while
// someone watches), served within limits a small board can afford.
package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// ErrStopping: posed is stopping or restarting with a new configuration.
var ErrStopping = errors.New("posed is stopping or restarting")

// HTTPLimits bound what HTTP clients can hold of posed: connections at
// once (more wait in the kernel's queue, holding no descriptor of posed's),
// how long a connection may stay idle or take to send its request, and how
// long an answer may take to leave (the live stream sets its own per
// frame, View.WriteTimeout).
type HTTPLimits struct {
	Conns                        int
	Idle, Header, Request, Write time.Duration
}

// DefaultHTTPLimits suit a board: a few people and a Prometheus server.
func DefaultHTTPLimits() HTTPLimits {
	return HTTPLimits{Conns: 32, Idle: 30 * time.Second, Header: 5 * time.Second, Request: 10 * time.Second, Write: 30 * time.Second}
}

// HTTPServer serves posed's page, metrics, health and live view.
type HTTPServer struct {
	srv  *http.Server
	view *View
	done chan struct{}
}

// StartHTTP serves h on ln within l, in the background, until Shutdown.
func StartHTTP(ln net.Listener, h http.Handler, view *View, l HTTPLimits) *HTTPServer {
	s := &HTTPServer{
		srv: &http.Server{Handler: h, ReadHeaderTimeout: l.Header, ReadTimeout: l.Request, WriteTimeout: l.Write,
			IdleTimeout: l.Idle, MaxHeaderBytes: 16 << 10},
		view: view, done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		s.srv.Serve(limitListener(ln, l.Conns))
	}()
	return s
}

// Shutdown ends the live streams at once (a viewer would otherwise hold a
// restart for the whole shutdown wait, and keep a frozen stream open
// after it), lets other requests finish within ctx, then closes what is
// left.
func (s *HTTPServer) Shutdown(ctx context.Context) {
	s.view.Off(ErrStopping)
	if s.srv.Shutdown(ctx) != nil {
		s.srv.Close()
	}
	<-s.done
}

// limitListener accepts at most n connections at once.
func limitListener(ln net.Listener, n int) net.Listener {
	if n <= 0 {
		return ln
	}
	return &limited{Listener: ln, sem: make(chan struct{}, n), closed: make(chan struct{})}
}

type limited struct {
	net.Listener
	sem    chan struct{}
	once   sync.Once
	closed chan struct{}
}

func (l *limited) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.closed:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.sem }}, nil
}

func (l *limited) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.Listener.Close()
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

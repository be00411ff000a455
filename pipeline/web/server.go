// Package web is posed's HTTP side: the page at /, /metrics, /healthz and the
// live view (/live, /snapshot.jpg: annotated frames, drawn only while
// someone watches), served within limits a small board can afford.
package web

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
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
		srv: &http.Server{Handler: markServed(h), ReadHeaderTimeout: l.Header, ReadTimeout: l.Request, WriteTimeout: l.Write,
			IdleTimeout: l.Idle, MaxHeaderBytes: 16 << 10,
			ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }},
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

// limitListener holds at most n connections at once. A connection beyond
// the cap takes the place of the oldest one not being served (a request
// not yet read whole, or a keep-alive between requests): a slowloris of
// 300 connections held every slot and /healthz went unanswered for
// seconds. With every connection being served, the new one is closed.
func limitListener(ln net.Listener, n int) net.Listener {
	if n <= 0 {
		return ln
	}
	return &limited{Listener: ln, n: n}
}

type limited struct {
	net.Listener
	n     int
	mu    sync.Mutex
	conns []*limitedConn // open, oldest first
}

func (l *limited) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		lc := &limitedConn{Conn: c, l: l}
		l.mu.Lock()
		var victim *limitedConn
		if len(l.conns) >= l.n {
			for i, o := range l.conns {
				if o.busy.Load() == 0 {
					victim = o
					l.conns = slices.Delete(l.conns, i, i+1)
					break
				}
			}
			if victim == nil {
				l.mu.Unlock()
				c.Close() // every connection is being served
				continue
			}
		}
		l.conns = append(l.conns, lc)
		l.mu.Unlock()
		if victim != nil {
			victim.Conn.Close()
		}
		return lc, nil
	}
}

// limitedConn is a connection of a limited listener; busy counts the
// requests being served on it (markServed).
type limitedConn struct {
	net.Conn
	l    *limited
	busy atomic.Int32
	once sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		if i := slices.Index(c.l.conns, c); i >= 0 {
			c.l.conns = slices.Delete(c.l.conns, i, i+1)
		}
		c.l.mu.Unlock()
	})
	return err
}

// connKey holds a request's connection in its context (ConnContext).
type connKey struct{}

// markServed counts each request on its connection while it is served, so
// that the listener does not take a connection that serves one.
func markServed(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := r.Context().Value(connKey{}).(*limitedConn); ok {
			c.busy.Add(1)
			defer c.busy.Add(-1)
		}
		h.ServeHTTP(w, r)
	})
}

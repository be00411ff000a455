package device

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Status is a source's state as the daemon reports it.
type Status struct {
	Online bool
	Err    error         // why it is offline (nil when online)
	Retry  time.Duration // wait before the next attempt (offline)
}

// Reopening wraps a source that may fail: when opening or reading fails
// (the camera was unplugged, the driver timed out) it closes the source,
// reports the camera offline, waits with exponential backoff and opens it
// again, for as long as the context lasts. A bad frame (wrong size,
// undecodable) is passed on without re-opening: the source itself is fine,
// until BadRun of them come in a row (a replayed folder whose files
// vanished, a camera sending garbage), which is a failing source: reported
// and re-opened with backoff like any other, not spun on.
type Reopening struct {
	Open      func() (Source, error)
	Backoff   time.Duration // first wait (default 1s)
	MaxWait   time.Duration // longest wait (default 30s)
	BadRun    int           // bad frames in a row that fail the source (default 30)
	OnStatus  func(Status)  // called on every change, may be nil
	bad       int           // bad frames in a row
	src       Source
	wait      time.Duration
	online    bool
	seq       uint64
	sleepFunc func(ctx context.Context, d time.Duration) error
}

// Next returns the next frame, re-opening the source as often as needed.
// It returns only with a frame, a context error, ErrEnd from a replay, or
// the error of one dropped frame (ErrFrameSize, ErrBadFrame): the source
// stays open and the next call goes on after that frame.
func (r *Reopening) Next(ctx context.Context, dst *Frame) error {
	if r.Backoff <= 0 {
		r.Backoff = time.Second
	}
	if r.MaxWait < r.Backoff {
		r.MaxWait = 30 * time.Second
	}
	if r.BadRun <= 0 {
		r.BadRun = 30
	}
	sleep := r.sleepFunc
	if sleep == nil {
		sleep = sleepCtx
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if r.src == nil {
			src, err := r.Open()
			if err != nil {
				if err := r.fail(ctx, fmt.Errorf("opening: %w", err), sleep); err != nil {
					return err
				}
				continue
			}
			r.src = src
		}
		err := r.src.Next(ctx, dst)
		switch {
		case err == nil:
			r.seq++
			dst.Seq = r.seq
			r.wait, r.bad = 0, 0
			if !r.online {
				r.online = true
				r.report(Status{Online: true})
			}
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, ErrEnd):
			return err
		case errors.Is(err, ErrFrameSize), errors.Is(err, ErrBadFrame):
			if r.bad++; r.bad < r.BadRun {
				return err
			}
			err = fmt.Errorf("%d bad frames in a row, the last: %w", r.bad, err)
			r.bad = 0
		}
		r.src.Close()
		r.src = nil
		if err := r.fail(ctx, err, sleep); err != nil {
			return err
		}
	}
}

// fail reports the source offline and waits before the next attempt.
func (r *Reopening) fail(ctx context.Context, cause error, sleep func(context.Context, time.Duration) error) error {
	if r.wait == 0 {
		r.wait = r.Backoff
	} else {
		r.wait = min(2*r.wait, r.MaxWait)
	}
	r.online = false
	r.report(Status{Online: false, Err: cause, Retry: r.wait})
	return sleep(ctx, r.wait)
}

func (r *Reopening) report(s Status) {
	if r.OnStatus != nil {
		r.OnStatus(s)
	}
}

// Close closes the current source, if open.
func (r *Reopening) Close() error {
	if r.src == nil {
		return nil
	}
	err := r.src.Close()
	r.src = nil
	return err
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

var _ Source = (*Reopening)(nil)

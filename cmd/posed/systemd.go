package main

import (
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"golang.org/x/sys/unix"
)

// notifier tells systemd how posed is (sd_notify, through go-systemd):
// READY, STOPPING, RELOADING and the watchdog's pings. Not under systemd
// ($NOTIFY_SOCKET unset) it does nothing.
type notifier struct {
	watchdog time.Duration // from WATCHDOG_USEC (for this pid); 0 if off
}

func newNotifier() *notifier {
	d, _ := daemon.SdWatchdogEnabled(false)
	return &notifier{watchdog: d}
}

func (n *notifier) send(state string) error {
	_, err := daemon.SdNotify(false, state)
	return err
}

// monotonicUsec is CLOCK_MONOTONIC in microseconds, which systemd wants
// with RELOADING=1.
func monotonicUsec() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return int64(ts.Sec)*1_000_000 + int64(ts.Nsec)/1000
}

package main

import (
	"github.com/coreos/go-systemd/v22/daemon"
	"golang.org/x/sys/unix"
)

// notify tells systemd how posed is (sd_notify, through go-systemd):
// READY, STOPPING, RELOADING and the watchdog's pings. Not under systemd
// ($NOTIFY_SOCKET unset) it does nothing.
func notify(state string) { daemon.SdNotify(false, state) }

// monotonicUsec is CLOCK_MONOTONIC in microseconds, which systemd wants
// with RELOADING=1.
func monotonicUsec() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0
	}
	return int64(ts.Sec)*1_000_000 + int64(ts.Nsec)/1000
}

package main

import (
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
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

package main

import (
	"net"
	"os"
	"strconv"
	"time"
)

// notifier speaks the sd_notify protocol: datagrams to $NOTIFY_SOCKET.
// Without the variable (not under systemd) it does nothing.
type notifier struct {
	addr     string
	watchdog time.Duration // WATCHDOG_USEC, 0 if the watchdog is off
}

func newNotifier() *notifier {
	n := &notifier{addr: os.Getenv("NOTIFY_SOCKET")}
	if us, err := strconv.ParseInt(os.Getenv("WATCHDOG_USEC"), 10, 64); err == nil && us > 0 {
		if pid := os.Getenv("WATCHDOG_PID"); pid == "" || pid == strconv.Itoa(os.Getpid()) {
			n.watchdog = time.Duration(us) * time.Microsecond
		}
	}
	return n
}

func (n *notifier) send(state string) error {
	if n.addr == "" {
		return nil
	}
	addr := n.addr
	if addr[0] == '@' { // abstract socket
		addr = "\x00" + addr[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: addr, Net: "unixgram"})
	if err != nil {
		return err
	}
	defer c.Close()
	_, err = c.Write([]byte(state))
	return err
}

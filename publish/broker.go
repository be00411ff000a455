package publish

import (
	"context"
	"fmt"
	"log/slog"
	"net"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
)

// Broker is the embedded MQTT broker (mochi-mqtt), for a board with no
// broker of its own and for `make run`. It accepts every client on its
// address: bind it to loopback unless the network is trusted.
type Broker struct {
	srv  *mochi.Server
	addr string
}

// StartBroker listens on addr (host:port) and serves in the background.
func StartBroker(addr string, log *slog.Logger) (*Broker, error) {
	// Fail now, with a clear error, if the address is taken.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("publish: embedded broker: %w", err)
	}
	ln.Close()
	// The broker logs only errors: client connects and disconnects are noise.
	blog := slog.New(discardBelow{log.Handler(), slog.LevelError}).With("component", "broker")
	srv := mochi.New(&mochi.Options{InlineClient: false, Logger: blog})
	if err := srv.AddHook(new(auth.AllowHook), nil); err != nil {
		return nil, fmt.Errorf("publish: embedded broker: %w", err)
	}
	if err := srv.AddListener(listeners.NewTCP(listeners.Config{ID: "tcp", Address: addr})); err != nil {
		return nil, fmt.Errorf("publish: embedded broker: %w", err)
	}
	if err := srv.Serve(); err != nil {
		return nil, fmt.Errorf("publish: embedded broker: %w", err)
	}
	return &Broker{srv: srv, addr: addr}, nil
}

// Addr is the broker's address.
func (b *Broker) Addr() string { return b.addr }

// Close stops the broker.
func (b *Broker) Close() error { return b.srv.Close() }

// discardBelow passes on records at or above min only.
type discardBelow struct {
	slog.Handler
	min slog.Level
}

func (d discardBelow) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= d.min && d.Handler.Enabled(ctx, l)
}

func (d discardBelow) WithAttrs(a []slog.Attr) slog.Handler {
	return discardBelow{d.Handler.WithAttrs(a), d.min}
}

func (d discardBelow) WithGroup(n string) slog.Handler {
	return discardBelow{d.Handler.WithGroup(n), d.min}
}

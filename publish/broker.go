package publish

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"strings"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
)

// Broker is the embedded MQTT broker (mochi-mqtt), for a board with no
// broker of its own and for `make run`.
type Broker struct {
	srv  *mochi.Server
	addr string
}

// BrokerAuth says who may use the embedded broker. Posed itself connects
// as PosedUser with PosedPassword and is the only client that may publish
// on Topics; Readers (user → password) may log in, read them, send
// commands (write Commands) and read and write other topics; anonymous
// clients, when Anonymous is set, may read but write nothing (a stranger
// could otherwise fill posed's memory with retained messages). A client
// that gives a known user name with a wrong password is refused.
type BrokerAuth struct {
	PosedUser, PosedPassword string
	Readers                  map[string]string
	Anonymous                bool
	Topics                   []string // topics only posed writes (OwnTopics)
	Commands                 []string // filters of the command topics (CommandTopics)
}

// ReadUsers reads a readers file: one "user:password" per line, blank
// lines and lines starting with '#' ignored.
func ReadUsers(data []byte) (map[string]string, error) {
	users := map[string]string{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		u, pw, ok := strings.Cut(line, ":")
		if !ok || u == "" || pw == "" {
			return nil, fmt.Errorf("line %d: want user:password", i+1)
		}
		users[u] = pw
	}
	return users, nil
}

// ledger turns a into mochi's access rules.
func (a BrokerAuth) ledger() *auth.Ledger {
	// The filters never overlap (Topics are topic names, Commands the
	// set/# filter), so the order in which the ledger tries them does not
	// matter.
	l := &auth.Ledger{Users: auth.Users{}}
	own, reader, readOnly := auth.Filters{}, auth.Filters{}, auth.Filters{}
	for _, t := range a.Topics {
		own[auth.RString(t)] = auth.ReadWrite
		reader[auth.RString(t)] = auth.ReadOnly
		readOnly[auth.RString(t)] = auth.ReadOnly
	}
	for _, t := range a.Commands {
		own[auth.RString(t)] = auth.ReadOnly
		reader[auth.RString(t)] = auth.ReadWrite
		readOnly[auth.RString(t)] = auth.ReadOnly
	}
	l.Users[a.PosedUser] = auth.UserRule{Username: auth.RString(a.PosedUser), Password: auth.RString(a.PosedPassword), ACL: own}
	// Known users with a wrong password match no user entry: refuse them
	// by name before the anonymous rule, which would admit them.
	l.Auth = append(l.Auth, auth.AuthRule{Username: auth.RString(a.PosedUser), Allow: false})
	for u, pw := range a.Readers {
		l.Users[u] = auth.UserRule{Username: auth.RString(u), Password: auth.RString(pw), ACL: reader}
		l.Auth = append(l.Auth, auth.AuthRule{Username: auth.RString(u), Allow: false})
	}
	if a.Anonymous {
		l.Auth = append(l.Auth, auth.AuthRule{Allow: true})
	}
	// A reader's own rules cover posed's topics; other topics are free to
	// it. Everyone else (anonymous clients) may read, not write: the last
	// rule's "#" denies every write (mochi denies a write that a filter of
	// the matching rule covers without write access).
	for u := range a.Readers {
		l.ACL = append(l.ACL, auth.ACLRule{Username: auth.RString(u)})
	}
	l.ACL = append(l.ACL, auth.ACLRule{Filters: auth.Filters{"#": auth.ReadOnly}})
	return l
}

// The embedded broker's bounds: a packet (posed's own largest are its
// snapshots, tens of kilobytes) and connected clients.
const (
	BrokerMaxPacket  = 1 << 20
	BrokerMaxClients = 64
)

// StartBroker listens on addr (host:port) and serves in the background,
// admitting clients as a says. It warns when it listens beyond loopback
// and admits anonymous clients: anyone on the network then reads the poses.
func StartBroker(addr string, a BrokerAuth, log *slog.Logger) (*Broker, error) {
	if a.PosedUser == "" || a.PosedPassword == "" {
		return nil, fmt.Errorf("publish: embedded broker: posed's own user and password are not set")
	}
	// Fail now, with a clear error, if the address is taken.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("publish: embedded broker: %w", err)
	}
	loopback := ln.Addr().(*net.TCPAddr).IP.IsLoopback()
	ln.Close()
	if !loopback && a.Anonymous {
		log.Warn("embedded MQTT broker listens beyond loopback and admits anonymous clients: anyone who can reach it reads the poses (set mqtt.embedded_anonymous: false and mqtt.embedded_users)", "addr", addr)
	}
	// The broker logs only errors: client connects and disconnects are noise.
	blog := slog.New(discardBelow{log.Handler(), slog.LevelError}).With("component", "broker")
	caps := mochi.NewDefaultServerCapabilities()
	caps.MaximumPacketSize = BrokerMaxPacket // refused before it is read
	caps.MaximumClients = BrokerMaxClients
	srv := mochi.New(&mochi.Options{InlineClient: false, Logger: blog, Capabilities: caps})
	if err := srv.AddHook(new(auth.Hook), &auth.Options{Ledger: a.ledger()}); err != nil {
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

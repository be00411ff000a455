// Package broker is posed's embedded MQTT broker (mochi-mqtt), for a
// board with no broker of its own and for make run: who may read and write
// what, and a close that cannot hang a stop or a reload.
package broker

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/hooks/auth"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Broker is the embedded MQTT broker (mochi-mqtt), for a board with no
// broker of its own and for `make run`.
type Broker struct {
	srv  *mochi.Server
	addr string
	a    Auth
	log  *slog.Logger
}

// Auth says who may use the embedded broker. Posed itself connects
// as PosedUser with PosedPassword and is the only client that may publish
// on Topics; Readers (user → password) may log in, read them, send
// commands (write Commands) and read and write other topics; anonymous
// clients, when Anonymous is set, may read but write nothing (a stranger
// could otherwise fill posed's memory with retained messages). A client
// that gives a known user name with a wrong password is refused.
//
// The same rules hold for a client's will (its last message, which the
// broker publishes when the client drops): a client may set a will only on
// a topic it may write, or it is refused at CONNECT; anonymous clients do
// not read the command topics (what others send posed); and posed's client
// id (PosedClientID) is refused from any other user, which would otherwise
// take the id over and disconnect posed.
type Auth struct {
	PosedUser, PosedPassword string
	Readers                  map[string]string
	Anonymous                bool
	Topics                   []string // topics only posed writes (publish.OwnTopics)
	Commands                 []string // filters of the command topics (publish.CommandTopics)
	// Pictures are posed's topics that carry the camera's pictures
	// (publish.PictureTopics): not anonymous clients' to read.
	Pictures []string
	// posed's client id, mqtt.client_id; or, where posed draws its ids
	// (each run its own, so that a reload's two connections can overlap),
	// the prefix they all have (publish.ClientIDPrefix), which 8 hex
	// digits follow.
	PosedClientID, PosedIDPrefix string
}

// posedID says whether id is posed's: refused from anyone else.
func (a *Auth) posedID(id string) bool {
	if a.PosedClientID != "" && id == a.PosedClientID {
		return true
	}
	rest, ok := strings.CutPrefix(id, a.PosedIDPrefix)
	if a.PosedIDPrefix == "" || !ok || len(rest) != 8 {
		return false
	}
	_, err := hex.DecodeString(rest)
	return err == nil
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
func (a Auth) ledger() *auth.Ledger {
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
		// posed writes its own command topics once a reload: the
		// handover's barrier (publish.Publisher.TakeOver), which mochi
		// would answer, refused, by dropping the connection.
		own[auth.RString(t)] = auth.ReadWrite
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
	// The commands others send posed are not anonymous clients' to read
	// (a rule of Deny filters alone refuses what they match and passes the
	// rest to the next rule).
	deny := auth.Filters{}
	for _, t := range a.Commands {
		deny[auth.RString(t)] = auth.Deny
	}
	// Nor are the camera's pictures (the snapshots): an anonymous reader
	// reads the angles, not what the camera sees.
	for _, t := range a.Pictures {
		deny[auth.RString(t)] = auth.Deny
	}
	l.ACL = append(l.ACL, auth.ACLRule{Filters: deny})
	l.ACL = append(l.ACL, auth.ACLRule{Filters: auth.Filters{"#": auth.ReadOnly}})
	return l
}

// guard refuses at CONNECT what the access rules cannot see later: a will
// on a topic the client may not write (the broker publishes wills past
// the rules: an anonymous will on set/detect "ON" turned the privacy
// switch back on), and posed's client id from another user.
type guard struct {
	mochi.HookBase
	srv    *mochi.Server
	ledger *auth.Ledger
	a      Auth
}

func (g *guard) ID() string { return "posed-guard" }

func (g *guard) Provides(b byte) bool { return b == mochi.OnConnect }

func (g *guard) OnConnect(cl *mochi.Client, pk packets.Packet) error {
	refuse := func(code packets.Code) error {
		g.srv.SendConnack(cl, code, false, nil)
		return code
	}
	user := string(cl.Properties.Username)
	if user != g.a.PosedUser && g.a.posedID(cl.ID) {
		return refuse(packets.ErrClientIdentifierNotValid)
	}
	if pk.Connect.WillFlag {
		if _, ok := g.ledger.ACLOk(cl, pk.Connect.WillTopic, true); !ok {
			if cl.Properties.ProtocolVersion < 5 {
				// mochi passes 0x87 to a 3.1.1 client as it is, which
				// paho takes for an acceptance: the 3.1.1 code.
				return refuse(packets.Err3NotAuthorized)
			}
			return refuse(packets.ErrNotAuthorized)
		}
	}
	return nil
}

// The embedded broker's bounds: a packet (posed's own largest are its
// snapshots, tens of kilobytes) and connected clients.
const (
	MaxPacket  = 1 << 20
	MaxClients = 64
)

// Start listens on addr (host:port) and serves in the background,
// admitting clients as a says. It warns when it listens beyond loopback
// and admits anonymous clients: anyone on the network then reads the poses.
func Start(addr string, a Auth, log *slog.Logger) (*Broker, error) {
	if a.PosedUser == "" || a.PosedPassword == "" {
		return nil, fmt.Errorf("embedded broker: posed's own user and password are not set")
	}
	// Fail now, with a clear error, if the address is taken.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	loopback := ln.Addr().(*net.TCPAddr).IP.IsLoopback()
	ln.Close()
	if !loopback && a.Anonymous {
		log.Warn("embedded MQTT broker listens beyond loopback and admits anonymous clients: anyone who can reach it reads the poses and the attention (not the snapshots, which only embedded_users read; set mqtt.embedded_anonymous: false and mqtt.embedded_users)", "addr", addr)
	}
	// The broker logs only errors: client connects and disconnects are noise.
	blog := slog.New(discardBelow{log.Handler(), slog.LevelError}).With("component", "broker")
	caps := mochi.NewDefaultServerCapabilities()
	caps.MaximumPacketSize = MaxPacket // refused before it is read
	caps.MaximumClients = MaxClients
	srv := mochi.New(&mochi.Options{InlineClient: false, Logger: blog, Capabilities: caps})
	ledger := a.ledger()
	if err := srv.AddHook(&guard{srv: srv, ledger: ledger, a: a}, nil); err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	if err := srv.AddHook(new(auth.Hook), &auth.Options{Ledger: ledger}); err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	if err := srv.AddListener(listeners.NewTCP(listeners.Config{ID: "tcp", Address: addr})); err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	if err := srv.Serve(); err != nil {
		return nil, fmt.Errorf("embedded broker: %w", err)
	}
	return &Broker{srv: srv, addr: addr, a: a, log: log}, nil
}

// Addr is the broker's address.
func (b *Broker) Addr() string { return b.addr }

// The broker's close waits until posed's own client has left (ownLeave
// at most), then gives mochi-mqtt closeBound to close. mochi-mqtt v2.7.9
// can deadlock when a client leaves while it closes (its issue #488:
// Clients.GetByListener read-locks twice, and a leaving client's write
// lock waits between the two; fixed by PR #489, in no release yet: take
// it when one carries it). Posed's own client leaves just before every
// stop and reload; one in about 2000 stops hung (#55). A third-party
// client leaving at that moment can still hang mochi's close: the bound
// lets posed stop or reload all the same (the listener is closed first,
// so the address is free again), and says so.
const (
	ownLeave   = time.Second
	closeBound = 3 * time.Second
)

// posedGone says whether posed's clients have left: gone from the clients'
// map (a clean session: its write lock is behind it), or closed with a
// persistent session (mqtt.client_id), which stays in the map and takes
// no write lock.
func (b *Broker) posedGone() bool {
	for id, cl := range b.srv.Clients.GetAll() {
		if b.a.posedID(id) && !(cl.Closed() && !cl.Properties.Clean) {
			return false
		}
	}
	return true
}

// Close stops the broker, within ownLeave and closeBound.
func (b *Broker) Close() error {
	deadline := time.Now().Add(ownLeave)
	for !b.posedGone() && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	done := make(chan error, 1)
	go func() { done <- b.srv.Close() }()
	t := time.NewTimer(closeBound)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		b.log.Error("embedded MQTT broker: its close did not end (a client left as it closed: mochi-mqtt issue #488); going on without it", "within", closeBound)
		return fmt.Errorf("embedded broker: close did not end within %v", closeBound)
	}
}

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

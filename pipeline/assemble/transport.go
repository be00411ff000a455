package assemble

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"

	"github.com/edgepose/posed/config"
	"github.com/edgepose/posed/internal/regular"
	"github.com/edgepose/posed/publish"
	"github.com/edgepose/posed/publish/broker"
)

// PublishSettings are the publisher's settings of the mqtt block: the
// embedded broker as tcp:// its listen address, the password read from
// password_file where it is given there.
func PublishSettings(m config.MQTT) (publish.Settings, error) {
	b := m.Broker
	if b == "embedded" {
		b = "tcp://" + m.Listen
	}
	pw, err := m.ReadPassword()
	return publish.Settings{Broker: b, Prefix: m.Prefix, ClientID: m.ClientID, Username: m.Username, Password: pw,
		CA: m.CA, Cert: m.Cert, Key: m.Key, QoS: m.QoS, MaxRate: m.MaxRate, ConnectTimeout: m.ConnectTimeout,
		Discovery: m.Discovery, DiscoveryTopic: m.DiscoveryTopic, HAInterval: m.HAInterval, HADeadband: m.HADeadband}, err
}

// HAURL is the device's configuration_url in Home Assistant: mqtt.ha_url,
// else posed's HTTP page where metrics.listen can be reached from another
// host (by its address, or by the host name when it listens on all), else
// none.
func HAURL(cfg config.Config) string {
	if cfg.MQTT.HAURL != "" {
		return cfg.MQTT.HAURL
	}
	host, port, err := net.SplitHostPort(cfg.Metrics.Listen)
	if err != nil || port == "0" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() || host == "localhost" {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		h, err := os.Hostname()
		if err != nil || h == "" {
			return ""
		}
		host = h
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

// EmbeddedAuth sets who may use the embedded broker: posed itself as
// mqtt.username with mqtt.password (or password_file) where they are set,
// else as "posed" with a password drawn for this run (m is updated so that
// the publisher logs in with it); the readers of mqtt.embedded_users; and
// anonymous readers if mqtt.embedded_anonymous.
func EmbeddedAuth(m *config.MQTT, device string) (broker.Auth, error) {
	s, err := PublishSettings(*m)
	a := broker.Auth{Anonymous: m.EmbeddedAnonymous, Topics: publish.OwnTopics(s, device), Commands: []string{publish.CommandTopics(s, device)},
		Pictures: publish.PictureTopics(s, device), PosedClientID: m.ClientID}
	if m.ClientID == "" {
		// The publisher draws its id (each run its own, so that a reload's
		// two connections overlap on a broker kept through it); the broker
		// refuses every id of that look to anyone else.
		a.PosedIDPrefix = publish.ClientIDPrefix(device)
	}
	if err != nil {
		return a, err
	}
	pw := s.Password
	if m.Username == "" || pw == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return a, err
		}
		m.Username, m.Password, m.PasswordFile = "posed", hex.EncodeToString(b[:]), ""
		pw = m.Password
	}
	a.PosedUser, a.PosedPassword = m.Username, pw
	if m.EmbeddedUsers != "" {
		data, err := regular.ReadFile(m.EmbeddedUsers)
		if err != nil {
			return a, fmt.Errorf("mqtt.embedded_users: %w", err)
		}
		if a.Readers, err = broker.ReadUsers(data); err != nil {
			return a, fmt.Errorf("mqtt.embedded_users: %s: %w", m.EmbeddedUsers, err)
		}
		if _, clash := a.Readers[a.PosedUser]; clash {
			return a, fmt.Errorf("mqtt.embedded_users: %s lists %q, posed's own user", m.EmbeddedUsers, a.PosedUser)
		}
	}
	return a, nil
}

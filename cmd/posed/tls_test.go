package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mqtt "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgepose/posed/publish/mqtttest"
)

// pki is a throw-away certificate authority with a server certificate for
// 127.0.0.1 and a client certificate, written as PEM files.
type pki struct {
	dir                       string
	ca, serverCert, serverKey string
	clientCert, clientKey     string
	caPool                    *x509.CertPool
	clientPair                tls.Certificate
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir()}
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "posed test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	p.ca = p.write(t, "ca.pem", "CERTIFICATE", caDER)
	p.caPool = x509.NewCertPool()
	p.caPool.AddCert(caCert)
	issue := func(name string, serial int64, usage x509.ExtKeyUsage, ips []net.IP) (string, string) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return p.write(t, name+".pem", "CERTIFICATE", der), p.write(t, name+".key", "EC PRIVATE KEY", kder)
	}
	p.serverCert, p.serverKey = issue("server", 2, x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	p.clientCert, p.clientKey = issue("client", 3, x509.ExtKeyUsageClientAuth, nil)
	if p.clientPair, err = tls.LoadX509KeyPair(p.clientCert, p.clientKey); err != nil {
		t.Fatal(err)
	}
	return p
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func (p *pki) write(t *testing.T, name, kind string, der []byte) string {
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// posed talks to a broker that demands TLS, a client certificate signed by
// its CA and a user name with password: it connects, announces itself and
// publishes poses; the same broker refuses a wrong password, so the
// credentials really were checked.
func TestTLSClientCertificateAndPassword(t *testing.T) {
	passwd := mqtttest.Lookup(t, "mosquitto_passwd")
	p := newPKI(t)
	pwFile := filepath.Join(p.dir, "passwd")
	if out, err := exec.Command(passwd, "-b", "-c", pwFile, "camera", "s3cret").CombinedOutput(); err != nil {
		t.Fatalf("mosquitto_passwd: %v\n%s", err, out)
	}
	secret := filepath.Join(p.dir, "posed-password")
	os.WriteFile(secret, []byte("s3cret\n"), 0o600)
	// Run as root (as in CI), mosquitto would switch to its own user,
	// which cannot read the test's private temporary files; "user root"
	// keeps it as it was started (it is ignored when not started as root).
	broker := mqtttest.StartWith(t, fmt.Sprintf("user root\n"+
		"cafile %s\ncertfile %s\nkeyfile %s\nrequire_certificate true\nallow_anonymous false\npassword_file %s\n",
		p.ca, p.serverCert, p.serverKey, pwFile))
	url := "ssl://" + broker.Addr()
	clientTLS := &tls.Config{RootCAs: p.caPool, Certificates: []tls.Certificate{p.clientPair}, MinVersion: tls.VersionTLS12}

	// A wrong password is refused.
	bad := mqtt.NewClient(mqtt.NewClientOptions().AddBroker(url).SetClientID("posed-test-bad").
		SetTLSConfig(clientTLS).SetUsername("camera").SetPassword("wrong"))
	if tok := bad.Connect(); !tok.WaitTimeout(5*time.Second) || tok.Error() == nil {
		bad.Disconnect(0)
		t.Fatal("the broker accepted a wrong password: the test would not show that posed's credentials are used")
	}

	col := mqtttest.CollectFrom(t, mqtt.NewClientOptions().AddBroker(url).SetTLSConfig(clientTLS).
		SetUsername("camera").SetPassword("s3cret"), "posed/#")
	seq, _ := yawSequence(t)
	cfg := testConfig(t, seq, url)
	cfg.MQTT.CA, cfg.MQTT.Cert, cfg.MQTT.Key = p.ca, p.clientCert, p.clientKey
	cfg.MQTT.Username, cfg.MQTT.PasswordFile = "camera", secret
	if err := run(context.Background(), cfg, quietLog(), io.Discard); err != nil {
		t.Fatal(err)
	}
	col.WaitFor(t, "online, poses and offline over TLS", 5*time.Second, func(ms []mqtttest.Msg) bool {
		var online, pose, offline bool
		for _, m := range ms {
			switch {
			case m.Topic == "posed/test/available" && string(m.Payload) == "online":
				online = true
			case m.Topic == "posed/test/pose" && strings.Contains(string(m.Payload), `"yaw"`):
				pose = true
			case m.Topic == "posed/test/available" && string(m.Payload) == "offline":
				offline = online
			}
		}
		return online && pose && offline
	})
}

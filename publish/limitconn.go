package publish

import (
	"bufio"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"

	mqtt "github.com/eclipse/paho.mqtt.golang"
)

// maxInbound bounds the packets posed takes from its broker as they are.
// posed subscribes to its command topics only, whose payloads are words;
// paho would read a packet of any size (up to MQTT's 256 MB) into memory
// before anyone could look at it: one 100 MB command raised posed's RSS
// from 21 to 325 MB for good.
const maxInbound = 64 << 10

// oversizedPrefix starts the payload that replaces one over maxInbound:
// the prefix, then the size of the payload that was read and dropped.
const oversizedPrefix = "\x00posed: unread payload of "

// oversizedSize returns the size of the payload a replaced PUBLISH had, if
// payload is such a replacement.
func oversizedSize(payload []byte) (int, bool) {
	s, ok := strings.CutPrefix(string(payload), oversizedPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// limitConn is the broker connection as paho reads it: packets pass
// through unchanged, except a PUBLISH longer than max, whose payload is
// read in small pieces and dropped, and replaced by oversizedPrefix and
// its size (topic, flags and packet id kept, so paho acknowledges it as
// usual). Reads of MQTT's fixed header follow MQTT 3.1.1 §2.2.
type limitConn struct {
	net.Conn
	br      *bufio.Reader
	max     int
	pending []byte  // bytes of a rewritten header or packet for the caller
	left    int     // bytes of the current packet still to pass through
	hdr     [5]byte // the fixed header being passed on (pending's storage: no allocation per packet)
}

func newLimitConn(c net.Conn, max int) *limitConn {
	return &limitConn{Conn: c, br: bufio.NewReaderSize(c, 4096), max: max}
}

var errMalformed = errors.New("publish: malformed packet from the broker")

func (c *limitConn) Read(p []byte) (int, error) {
	for len(c.pending) == 0 {
		if c.left > 0 {
			n, err := c.br.Read(p[:min(c.left, len(p))])
			c.left -= n
			return n, err
		}
		if err := c.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.pending)
	c.pending = c.pending[n:]
	return n, nil
}

// next reads the next packet's fixed header and decides how it passes.
func (c *limitConn) next() error {
	first, err := c.br.ReadByte()
	if err != nil {
		return err
	}
	// pending is empty whenever next runs: its storage can be reused.
	hdr := append(c.hdr[:0], first)
	length, mult := 0, 1
	for i := 0; ; i++ {
		if i == 4 {
			return errMalformed // a remaining length of more than 4 bytes
		}
		d, err := c.br.ReadByte()
		if err != nil {
			return err
		}
		hdr = append(hdr, d)
		length += int(d&127) * mult
		mult *= 128
		if d&128 == 0 {
			break
		}
	}
	const publish = 3
	if first>>4 != publish || length <= c.max {
		c.pending, c.left = hdr, length
		return nil
	}
	// Variable header: topic (2-byte length, then the name) and, above
	// QoS 0, the packet id.
	var tl [2]byte
	if _, err := io.ReadFull(c.br, tl[:]); err != nil {
		return err
	}
	vh := 2 + int(binary.BigEndian.Uint16(tl[:]))
	if (first>>1)&3 > 0 {
		vh += 2
	}
	if vh > length {
		return errMalformed
	}
	out := make([]byte, 0, 5+vh+len(oversizedPrefix)+12)
	payload := oversizedPrefix + strconv.Itoa(length-vh)
	out = append(out, first)
	out = appendLength(out, vh+len(payload))
	out = append(out, tl[:]...)
	out = append(out, make([]byte, vh-2)...)
	if _, err := io.ReadFull(c.br, out[len(out)-(vh-2):]); err != nil {
		return err
	}
	if _, err := io.CopyN(io.Discard, c.br, int64(length-vh)); err != nil {
		return err
	}
	c.pending = append(out, payload...)
	return nil
}

// appendLength appends MQTT's variable-length encoding of n.
func appendLength(b []byte, n int) []byte {
	for {
		d := byte(n % 128)
		n /= 128
		if n > 0 {
			d |= 128
		}
		b = append(b, d)
		if n == 0 {
			return b
		}
	}
}

// openLimited is paho's connection opener for the schemes posed accepts
// (tcp, ssl, ws, wss), each connection wrapped in a limitConn.
func openLimited(uri *url.URL, o mqtt.ClientOptions) (net.Conn, error) {
	d := &net.Dialer{Timeout: o.ConnectTimeout}
	var conn net.Conn
	var err error
	switch uri.Scheme {
	case "tcp":
		conn, err = d.Dial("tcp", uri.Host)
	case "ssl":
		conn, err = tls.DialWithDialer(d, "tcp", uri.Host, o.TLSConfig)
	case "ws", "wss":
		u := *uri
		u.User = nil
		var tc *tls.Config
		if uri.Scheme == "wss" {
			tc = o.TLSConfig
		}
		conn, err = mqtt.NewWebsocket(u.String(), tc, o.ConnectTimeout, o.HTTPHeaders, o.WebsocketOptions)
	default:
		return nil, fmt.Errorf("publish: broker scheme %q is not tcp, ssl, ws or wss", uri.Scheme)
	}
	if err != nil {
		return nil, err
	}
	return newLimitConn(conn, maxInbound), nil
}

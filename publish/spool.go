package publish

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/edgepose/posed/internal/regular"
)

// The spool keeps the attention events waiting for the broker in the
// state directory as an append-only log (spoolFile): a record for each
// event held ("add"), each acknowledged by the broker ("take") and each
// dropped by the bound ("drop"), and now and then a mark of the time
// ("alive"). A record is one line: the CRC-32 (IEEE) of its JSON in 8 hex
// digits, a space, the JSON. Reading stops at the first record that is
// cut short or damaged: a power cut mid-write costs that record, not the
// file. When the records no longer needed outnumber twice those still
// needed (and the log is past spoolCompactAt), it is written anew with
// only what is needed
// (compaction, through a temporary file). So an event held and sent
// writes about its own size plus two short records, where the whole hold
// used to be rewritten at every change (#55: 134 MB written to drain 1000
// events).
//
// Adds are synced to the card (fsync) by the event goroutine, not the
// frame loop (a card's sync can take tens of milliseconds): an event is
// on the card before posed first tries to send it. Takes are not synced:
// a take lost to a power cut sends that event again, under its own id,
// which a consumer drops as one it has (QoS 1 may deliver twice anyway).
//
// The first record names the device: a state directory copied from
// another camera is not published under this one's topics (its log is
// set aside, named for its device).

// spoolFile is the log's name in the state directory; legacyEventsFile
// the whole-file hold it replaces, read once and removed.
const (
	spoolFile        = "events.log"
	legacyEventsFile = "events.json"
)

// spoolCompactAt: a log shorter than this is not compacted.
const spoolCompactAt = 64 << 10

// spoolMaxRead bounds what is read of a log at start: 1000 events and
// their records are well under a megabyte, and a log is compacted at
// start, so only one written by something else is longer; its first
// 8 MiB are read, as a log cut there.
const spoolMaxRead = 8 << 20

// aliveEvery: while an event is open, a mark of the time is appended at
// most this often, so that a run that dies ends its open events near
// when it died, not when the next run starts.
const aliveEvery = time.Minute

// spoolRecord is one record of the log.
type spoolRecord struct {
	Op     string          `json:"op"` // device, add, take, drop, open, alive
	Device string          `json:"device,omitempty"`
	N      uint64          `json:"n,omitempty"` // the event's number (add, take, drop)
	Key    string          `json:"key,omitempty"`
	Start  bool            `json:"start,omitempty"`
	Event  json.RawMessage `json:"event,omitempty"` // add, open
	Time   *time.Time      `json:"time,omitempty"`  // alive
}

// spool is the hold's log: its file open for appending, and its size in
// bytes and in records, which decide compaction.
type spool struct {
	path, device string
	f            *os.File
	size         int64 // the file's bytes
	records      int   // its records, the device's among them
	dirty        bool  // appended since the last sync
	lastAlive    time.Time
	closed       bool // the publisher has ended: nothing more is written
}

// encodeRecord is r as a line of the log.
func encodeRecord(r spoolRecord) []byte {
	j, _ := json.Marshal(r) // nothing in a record fails to encode
	line := make([]byte, 0, len(j)+10)
	line = fmt.Appendf(line, "%08x ", crc32.ChecksumIEEE(j))
	line = append(line, j...)
	return append(line, '\n')
}

// readSpool reads the records of the log at path, up to the first
// damaged one; damaged reports whether there was one (the records before
// it are returned).
func readSpool(path string) (recs []spoolRecord, damaged bool, err error) {
	f, err := regular.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	br := bufio.NewReader(io.LimitReader(f, spoolMaxRead))
	for {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return recs, len(line) > 0, nil // a last record without its newline was cut short
		}
		if err != nil {
			return recs, true, err
		}
		var r spoolRecord
		sum, j, ok := bytes.Cut(bytes.TrimSuffix(line, []byte("\n")), []byte(" "))
		if !ok || len(sum) != 8 || fmt.Sprintf("%08x", crc32.ChecksumIEEE(j)) != string(sum) || json.Unmarshal(j, &r) != nil {
			return recs, true, nil
		}
		recs = append(recs, r)
	}
}

// rewrite writes the log anew with recs (the device's record first), and
// opens it for appending.
func (s *spool) rewrite(recs []spoolRecord) error {
	if s.closed {
		return nil
	}
	var b bytes.Buffer
	b.Write(encodeRecord(spoolRecord{Op: "device", Device: s.device}))
	for _, r := range recs {
		b.Write(encodeRecord(r))
	}
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
	if err := regular.WriteFile(s.path, b.Bytes()); err != nil {
		return err
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	s.f, s.size, s.records, s.dirty = f, int64(b.Len()), len(recs)+1, true
	return nil
}

// append writes r at the end of the log.
func (s *spool) append(r spoolRecord) error {
	if s.closed {
		return nil
	}
	if s.f == nil {
		return errors.New("the events' log is not open")
	}
	line := encodeRecord(r)
	n, err := s.f.Write(line)
	s.size += int64(n)
	s.records++
	s.dirty = true
	return err
}

// compactDue says whether the log should be written anew, live of its
// records being still needed: past spoolCompactAt bytes, once those no
// longer needed outnumber them twice (an event gone leaves two: its add
// and its take or drop).
func (s *spool) compactDue(live int) bool {
	return s.size > spoolCompactAt && s.records-1-live > 2*live
}

// sync puts what was appended on the card.
func (s *spool) sync() error {
	if s.f == nil || !s.dirty {
		return nil
	}
	s.dirty = false
	return s.f.Sync()
}

// close closes the log's file for good.
func (s *spool) close() {
	s.closed = true
	if s.f != nil {
		s.f.Sync()
		s.f.Close()
		s.f = nil
	}
}

// setAside renames the log of another device beside this one's, named for
// that device, and returns the new path.
func setAside(path, device string) (string, error) {
	clean := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, device)
	to := filepath.Join(filepath.Dir(path), "events-"+clean+".log")
	if _, err := os.Lstat(to); !errors.Is(err, fs.ErrNotExist) {
		to = filepath.Join(filepath.Dir(path), fmt.Sprintf("events-%s-%d.log", clean, time.Now().Unix()))
	}
	return to, os.Rename(path, to)
}

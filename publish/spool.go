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
// file. When the records of events gone outweigh those still held (and
// spoolCompactAt), the log is written anew with only what is held
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

// spoolCompactAt: the log is compacted once the bytes of records no
// longer needed pass this and the bytes still needed.
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

// spool is the hold's log: its file open for appending, and the sizes that
// decide compaction.
type spool struct {
	path, device string
	f            *os.File
	size, live   int64 // the file's bytes; those of records still needed
	dirty        bool  // appended since the last sync
	written      int64 // every byte written, compactions included (tests)
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
	s.written += int64(b.Len())
	if err := regular.WriteFile(s.path, b.Bytes()); err != nil {
		return err
	}
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	s.f, s.size, s.live, s.dirty = f, int64(b.Len()), int64(b.Len()), true
	return nil
}

// append writes r at the end of the log; needed says whether it stays
// needed until compaction (an add, an open) or not (a take, a drop).
func (s *spool) append(r spoolRecord, needed bool) error {
	if s.closed {
		return nil
	}
	if s.f == nil {
		return errors.New("the events' log is not open")
	}
	line := encodeRecord(r)
	n, err := s.f.Write(line)
	s.written += int64(n)
	s.size += int64(n)
	if needed {
		s.live += int64(n)
	}
	s.dirty = true
	return err
}

// gone says that an add record of n bytes is no longer needed.
func (s *spool) gone(n int64) { s.live -= n }

// compactDue says whether the log should be written anew.
func (s *spool) compactDue() bool {
	dead := s.size - s.live
	return dead > spoolCompactAt && dead > s.live
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

package message

import (
	"errors"
	"strconv"
	"strings"
)

// Reply is what a command carried out has the publisher send.
type Reply struct {
	Detect   *bool  // the detection switch as it now is (retained on the detect topic)
	Snapshot []byte // an annotated JPEG for the snapshot topic
	// Warning: carried out, but the user must know something (the error
	// topic and the log), e.g. a switch that could not be recorded.
	Warning error
}

// ParseSwitch reads a switch command's payload: ON/OFF (Home Assistant's),
// true/false, 1/0, or a JSON boolean; anything else is an error naming it.
func ParseSwitch(payload []byte) (bool, error) {
	s := strings.TrimSpace(string(payload))
	switch strings.ToLower(s) {
	case "on", "true", "1":
		return true, nil
	case "off", "false", "0":
		return false, nil
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return false, errors.New("payload " + strconv.Quote(s) + " is not ON or OFF")
}

// AttentionInfo is what Home Assistant is told of the attention stage:
// its profile, its targets' names (the target sensor's options), the
// profile's states and the kinds of events it sends.
type AttentionInfo struct {
	Profile string
	Targets []string
	States  []string
	Events  []string
}

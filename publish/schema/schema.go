// Package schema holds the JSON Schemas of posed's MQTT messages.
package schema

import "embed"

// Files holds the schema of each JSON topic: pose, state, camera, stats, ha,
// error, primary, attention, event.
//
//go:embed *.json
var Files embed.FS

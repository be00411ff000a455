// Package schema holds the JSON Schemas of posed's MQTT messages.
package schema

import "embed"

// Files holds pose.json, state.json, camera.json, stats.json, ha.json and error.json.
//
//go:embed *.json
var Files embed.FS

package main

import (
	"fmt"
	"net/url"
	"os"

	"github.com/edgepose/posed/config"
)

// secretWarnings names the files holding a secret of cfg — the
// configuration file itself where it holds mqtt.password or a broker URL
// with a password, the password
// file, the TLS key, the embedded broker's users — that users other than
// their owner and group may read, as ssh refuses a private key others can
// read. posed runs with them all the same (the operator may have reasons);
// -check-config prints the warnings and a start logs them.
func secretWarnings(cfg config.Config, cfgPath string) []string {
	var out []string
	check := func(field, path string) {
		if path == "" {
			return
		}
		st, err := os.Stat(path)
		if err != nil || st.Mode().Perm()&0o004 == 0 {
			return
		}
		out = append(out, fmt.Sprintf("%s: %s is readable by every user (mode %04o): chmod o-r %s (posed's group is enough)",
			field, path, st.Mode().Perm(), path))
	}
	if cfg.MQTT.Password != "" {
		check("mqtt.password", cfgPath)
	}
	// A password in the broker's URL (tcp://user:secret@host) is one all
	// the same: paho logs in with it.
	if u, err := url.Parse(cfg.MQTT.Broker); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			check("mqtt.broker (its URL holds a password)", cfgPath)
		}
	}
	check("mqtt.password_file", cfg.MQTT.PasswordFile)
	check("mqtt.key", cfg.MQTT.Key)
	check("mqtt.embedded_users", cfg.MQTT.EmbeddedUsers)
	return out
}

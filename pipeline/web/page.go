package web

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"time"

	"github.com/edgepose/posed/pipeline/metrics"
)

// Handler serves /metrics, /healthz, the page at / and, with a view, the
// live stream /live and /snapshot.jpg.
func Handler(m *metrics.Metrics, maxAge time.Duration, version string, page func() PageInfo, view *View) http.Handler {
	mux := http.NewServeMux()
	if view != nil {
		mux.HandleFunc("/live", view.ServeLive)
		mux.HandleFunc("/snapshot.jpg", view.ServeSnapshot)
	}
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		m.WriteText(w, version)
	})
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		ok, why := m.Healthy(maxAge)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		writeIndex(w, page(), version, why, ok, view != nil)
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		ok, why := m.Healthy(maxAge)
		if !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		fmt.Fprintln(w, why)
		// The broker is a detail of the answer, not its status: frames
		// flowing is what /healthz vouches for.
		if m.MQTT != nil {
			if _, _, conn := m.MQTT(); conn {
				fmt.Fprintln(w, "mqtt: connected")
			} else if m.MQTTErr != nil && m.MQTTErr() != "" {
				fmt.Fprintln(w, "mqtt: not connected:", m.MQTTErr())
			} else {
				fmt.Fprintln(w, "mqtt: not connected")
			}
		}
	})
	return mux
}

// PageInfo is what posed's page at / says about this daemon.
type PageInfo struct {
	Device, Camera, Model, Broker string
}

// writeIndex writes posed's page at /. (fmt and html.EscapeString, not
// html/template: its reflection keeps every exported method in the binary,
// 1.8 MB on linux/arm64, measured.)
func writeIndex(w io.Writer, p PageInfo, version, health string, ok, live bool) {
	e := html.EscapeString
	state := "unhealthy"
	if ok {
		state = "healthy"
	}
	fmt.Fprintf(w, `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>posed %s</title>
<style>body{font-family:sans-serif;margin:2em;max-width:40em}dt{font-weight:bold}</style></head>
<body><h1>posed %s</h1>
<dl><dt>version</dt><dd>%s</dd>
<dt>camera</dt><dd>%s</dd>
<dt>model</dt><dd>%s</dd>
<dt>broker</dt><dd>%s</dd>
<dt>health</dt><dd>%s: %s</dd></dl>
%s<p><a href="/metrics">/metrics</a> (Prometheus) · <a href="/healthz">/healthz</a>%s</p>
</body></html>
`, e(p.Device), e(p.Device), e(version), e(p.Camera), e(p.Model), e(p.Broker), state, e(health), liveImg(live), liveLink(live))
}

func liveImg(live bool) string {
	if !live {
		return ""
	}
	return `<p><img src="/live" alt="live view: each face's box, track id and pose axes" style="max-width:100%;background:#222"></p>
`
}

func liveLink(live bool) string {
	if !live {
		return ""
	}
	return ` · <a href="/snapshot.jpg">/snapshot.jpg</a>`
}

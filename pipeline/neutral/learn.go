package neutral

import (
	"encoding/json"
	"math"
	"path/filepath"
	"time"

	"github.com/edgepose/posed/infer/rotation"
	"github.com/edgepose/posed/internal/regular"
	"github.com/edgepose/posed/message"
)

// Learning the neutral pose (zero.learn), as openpilot learns a driver's:
// while no neutral pose is set by hand (set/zero) or in the configuration,
// the primary face's poses are collected, one per sampleEvery, the last
// maxSamples kept. The neutral pose is where the person looks most, not the
// mean of every glance: the densest 10°×10° region of yaw × pitch (2° bins
// summed over their 5 × 5 neighbourhood), refined as the rotation mean of
// the poses within nearRadius of its centre. It is "calibrating" until it
// has minSamples poses and has moved less than stableMove over stableFor;
// then it is "learnt": used, kept in the state directory (source "learnt")
// and updated as poses come. When no primary face has been seen for
// zero.forget (the person left; another may come), the poses are dropped
// and learning starts again, the last learnt pose in use until a new one is.
const (
	sampleEvery = 100 * time.Millisecond
	maxSamples  = 1200 // two minutes of a face
	minSamples  = 200  // 20 s of a face
	estimateDue = time.Second
	stableFor   = 5 * time.Second
	stableMove  = 1.5 // degrees
	nearRadius  = 6   // degrees
	binDeg      = 2
	bins        = 180 / binDeg // over −90…90°
	spread      = 2            // bins each side: a 10° window
	saveEvery   = time.Minute
)

// Learning statuses (message.Learn.Status).
const (
	Calibrating = "calibrating"
	Learnt      = "learnt"
)

// learner holds the poses and the estimate. It is used by the frame loop
// alone.
type learner struct {
	on          bool
	forget      time.Duration
	poses       [maxSamples]rotation.Matrix
	yp          [maxSamples][2]float64 // their yaw and pitch
	n, next     int                    // poses held; where the next goes
	lastSample  time.Time              // the last pose taken
	lastFace    time.Time              // the last primary face seen
	lastEst     time.Time
	est         [2]float64 // the estimate's yaw and pitch
	estSince    time.Time  // since when it has stayed within stableMove
	hasEst      bool
	status      string
	learnt      bool // a learnt pose is in use
	lastSaved   time.Time
	hist        [bins][bins]float32
	near        []rotation.Matrix // scratch for the mean
	lastPublish message.Learn     // what the state last said
	progress    float64           // the most this learning has reached (progress never goes back)
}

// Learning returns what the state says of the learning, nil when it is
// off or a neutral pose is set by hand or in the configuration.
func (c *Pose) Learning() *message.Learn {
	if c == nil || !c.learn.on || c.manual() {
		return nil
	}
	return &c.learn.lastPublish
}

// manual reports a neutral pose measured on command or configured: it
// wins over learning.
func (c *Pose) manual() bool {
	p := c.pose.Load()
	return p != nil && p.msg.Source != "learnt"
}

// Observe gives learning the frame's primary face (nil: none) at now.
func (c *Pose) Observe(f *message.Face, now time.Time) {
	if c == nil || !c.learn.on {
		return
	}
	l := &c.learn
	if c.relearn.Swap(false) {
		l.n, l.next, l.hasEst, l.progress, l.learnt = 0, 0, false, 0, false
		l.lastSample, l.lastEst = time.Time{}, time.Time{}
		c.setStatus(Calibrating)
	}
	if c.manual() {
		return
	}
	if f == nil {
		if l.n > 0 && !l.lastFace.IsZero() && now.Sub(l.lastFace) >= l.forget {
			c.Log.Info("neutral pose: no face for a while, learning again", "after", l.forget)
			l.n, l.next, l.hasEst, l.progress = 0, 0, false, 0
			c.setStatus(Calibrating)
		}
		return
	}
	l.lastFace = now
	r, ok := Head(f)
	if !ok || now.Sub(l.lastSample) < sampleEvery {
		return
	}
	l.lastSample = now
	l.poses[l.next] = r
	l.yp[l.next] = [2]float64{f.Yaw.V, f.Pitch.V}
	l.next = (l.next + 1) % maxSamples
	l.n = min(l.n+1, maxSamples)
	if now.Sub(l.lastEst) < estimateDue {
		c.setStatus(l.status) // progress
		return
	}
	l.lastEst = now
	y, p := l.mode()
	if !l.hasEst || math.Hypot(y-l.est[0], p-l.est[1]) > stableMove {
		l.est, l.estSince, l.hasEst = [2]float64{y, p}, now, true
	}
	if l.n < minSamples || now.Sub(l.estSince) < stableFor {
		c.setStatus(Calibrating)
		return
	}
	c.adopt(now)
	c.setStatus(Learnt)
}

// mode is the densest 10°×10° region's centre of the poses held.
func (l *learner) mode() (yaw, pitch float64) {
	l.hist = [bins][bins]float32{}
	bin := func(a float64) int { return max(0, min(bins-1, int((a+90)/binDeg))) }
	for i := range l.n {
		l.hist[bin(l.yp[i][0])][bin(l.yp[i][1])]++
	}
	best, by, bp := float32(-1), 0, 0
	for y := range bins {
		for p := range bins {
			var s float32
			for dy := max(0, y-spread); dy <= min(bins-1, y+spread); dy++ {
				for dp := max(0, p-spread); dp <= min(bins-1, p+spread); dp++ {
					s += l.hist[dy][dp]
				}
			}
			if s > best {
				best, by, bp = s, y, p
			}
		}
	}
	return float64(by*binDeg-90) + binDeg/2.0, float64(bp*binDeg-90) + binDeg/2.0
}

// adopt makes the rotation mean of the poses near the estimate the
// neutral pose in use, and keeps it in the state directory now and then.
func (c *Pose) adopt(now time.Time) {
	l := &c.learn
	l.near = l.near[:0]
	for i := range l.n {
		if math.Hypot(l.yp[i][0]-l.est[0], l.yp[i][1]-l.est[1]) <= nearRadius {
			l.near = append(l.near, l.poses[i])
		}
	}
	if len(l.near) == 0 {
		return
	}
	y, p, r := rotation.Mean(l.near).Angles()
	m := &message.Zero{Yaw: message.Hundredths(y), Pitch: message.Hundredths(p), Roll: message.Hundredths(r), Source: "learnt", Frames: len(l.near), Set: now.UTC().Truncate(time.Second)}
	if old := c.State(); old != nil && old.Source == "learnt" && math.Abs(old.Yaw-m.Yaw) < 0.5 && math.Abs(old.Pitch-m.Pitch) < 0.5 && math.Abs(old.Roll-m.Roll) < 0.5 {
		return // hardly moved: keep the one in use (no allocation, no state message)
	}
	if !l.learnt {
		c.Log.Info("neutral pose learnt", "yaw", m.Yaw, "pitch", m.Pitch, "roll", m.Roll, "poses", len(l.near))
	}
	l.learnt = true
	c.set(m)
	if c.StateDir != "" && now.Sub(l.lastSaved) >= saveEvery {
		l.lastSaved = now
		b, _ := json.Marshal(m)
		if err := regular.WriteFile(filepath.Join(c.StateDir, zeroFile), b); err != nil {
			c.Log.Warn("the learnt neutral pose will not outlive a restart", "err", err)
		}
	}
	c.changed()
}

// setStatus records the learning's status and progress, and has the state
// published when either changes (progress by tenths).
func (c *Pose) setStatus(s string) {
	l := &c.learn
	l.status = s
	msg := message.Learn{Status: s, Progress: 1}
	if s == Calibrating {
		// Poses held, and the estimate's steadiness, each half the way.
		steady := 0.0
		if l.hasEst && !l.lastEst.IsZero() {
			steady = math.Min(1, l.lastEst.Sub(l.estSince).Seconds()/stableFor.Seconds())
		}
		p := math.Floor(10*(0.5*math.Min(1, float64(l.n)/minSamples)+0.5*steady)) / 10
		l.progress = math.Max(l.progress, math.Min(p, 0.9))
		msg.Progress = l.progress
	}
	if msg != l.lastPublish {
		l.lastPublish = msg
		c.changed()
	}
}

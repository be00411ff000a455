package attention

import (
	"time"

	"github.com/edgepose/posed/message"
)

// EngagementRules are the engagement profile's (config.EngagementRules):
// ROS4HRI's engagement levels (REP-155) from looking at Targets, with an
// on and an off delay, as occupancy sensors have (docs/internals.md).
type EngagementRules struct {
	Targets []string
	On, Off time.Duration
}

// Engagement levels (message.Attention.State, message.Face.Attention); ROS4HRI's
// fifth, UNKNOWN, is the state "unknown".
const (
	LevelDisengaged  = "disengaged"  // not looking, or looking away for Off
	LevelEngaging    = "engaging"    // looking, for less than On
	LevelEngaged     = "engaged"     // looking for On, and not away for Off since
	LevelDisengaging = "disengaging" // engaged, looking away for less than Off
)

// engagement is one face's engagement: each track has its own (a person
// who leaves the frame ends theirs).
type engagement struct {
	level            string // "" until the face is first known
	lookSince, awayT time.Time
	engagedSince     time.Time // when the face began to look, for the event
	target           message.Label
}

// observe takes the face's attention at now (looking at one of the
// rules' targets since since, or not) and appends the event that starts
// or ends.
func (g *engagement) observe(evs []message.Event, r *EngagementRules, now time.Time, looking bool, since time.Time, track uint64, target message.Label) []message.Event {
	g.target = target
	// At most three steps a frame: disengaged → engaging → engaged with
	// an On of 0.
	for range 3 {
		switch g.level {
		case "", LevelDisengaged:
			if !looking {
				g.level = LevelDisengaged
				return evs
			}
			g.level, g.lookSince = LevelEngaging, since
		case LevelEngaging:
			switch {
			case !looking:
				g.level = LevelDisengaged
			case now.Sub(g.lookSince) >= r.On:
				g.level, g.engagedSince = LevelEngaged, g.lookSince
				return append(evs, message.Event{Kind: message.EventEngagement, Phase: "start", Track: track, Time: now,
					Since: g.engagedSince, DurationS: seconds(now.Sub(g.engagedSince)), Target: target})
			default:
				return evs
			}
		case LevelEngaged:
			if looking {
				return evs
			}
			g.level, g.awayT = LevelDisengaging, since
		case LevelDisengaging:
			switch {
			case looking:
				g.level = LevelEngaged
				return evs
			case now.Sub(g.awayT) >= r.Off:
				g.level = LevelDisengaged
				return g.end(evs, g.awayT, track, "away")
			default:
				return evs
			}
		}
	}
	return evs
}

// end appends the end of an engagement at t (why: what ended it); the
// face is then disengaged.
func (g *engagement) end(evs []message.Event, t time.Time, track uint64, why string) []message.Event {
	g.level = LevelDisengaged
	if t.Before(g.engagedSince) {
		t = g.engagedSince
	}
	return append(evs, message.Event{Kind: message.EventEngagement, Phase: "end", Track: track, Time: t,
		Since: g.engagedSince, DurationS: seconds(t.Sub(g.engagedSince)), Target: g.target, Why: why})
}

// engaged reports whether an engagement is in progress (engaged or
// disengaging).
func (g *engagement) engaged() bool { return g.level == LevelEngaged || g.level == LevelDisengaging }

package feed

import "time"

// CET is the Dutch winter time the day curve is written in. The simulator uses a fixed zone,
// not the tz database, so that its output never depends on the machine.
func CET() *time.Location { return time.FixedZone("CET", 3600) }

// dayCurve is the share of the peak fleet in service at a local time of day (hours), piecewise
// linear: a night service, a morning peak from 7:30 to 8:45, a midday dip, an evening peak.
func dayCurve() [18][2]float64 {
	return [18][2]float64{
		{0, 0.06}, {1, 0.03}, {5, 0.03}, {6, 0.35}, {7, 0.85}, {7.5, 1}, {8.75, 1}, {9.5, 0.7},
		{10, 0.6}, {15, 0.62}, {16, 0.85}, {16.5, 0.95}, {18, 0.95}, {19, 0.6}, {20, 0.45},
		{22, 0.3}, {23, 0.15}, {24, 0.06},
	}
}

// Activity returns the share of the peak fleet in service at t (0 to 1).
func Activity(t time.Time) float64 { return activity(t.UnixNano()) }

func activity(unixNano int64) float64 {
	const day = 24 * int64(time.Hour)
	local := (unixNano + int64(time.Hour)) % day // CET is UTC+1
	if local < 0 {
		local += day
	}
	h := float64(local) / float64(time.Hour)
	curve := dayCurve()
	for i := 1; i < len(curve); i++ {
		a, b := curve[i-1], curve[i]
		if h <= b[0] {
			return a[1] + (b[1]-a[1])*(h-a[0])/(b[0]-a[0])
		}
	}
	return curve[len(curve)-1][1]
}

package feed

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// mode is how a line runs: it sets its stop spacing, speed and dwell time.
type mode uint8

const (
	bus mode = iota
	tram
	metro
	train
)

func (m mode) String() string {
	return [...]string{"bus", "tram", "metro", "train"}[m]
}

// spacingKm is the usual distance between stops; speedKmh the running speed between them.
func (m mode) spacingKm(urban bool) float64 {
	switch m {
	case tram:
		return 0.45
	case metro:
		return 1.1
	case train:
		return 9
	}
	if urban {
		return 0.45
	}
	return 1.3
}

func (m mode) speedKmh() float64 { return [...]float64{24, 20, 38, 95}[m] }

func (m mode) dwellS() float64 { return [...]float64{15, 20, 30, 60}[m] }

type region struct {
	name     string
	lat, lon float64
	radiusKm float64
}

func (r region) urban() bool { return r.radiusKm <= 12 }

type lineGroup struct {
	mode               mode
	count              int // lines at scale 1
	minStops, maxStops int
	firstNumber        int
}

// operatorSpec describes one NDOV data owner: its peak fleet at scale 1, its lines and where
// it runs. The figures are of the right order for the Dutch network, not an inventory.
type operatorSpec struct {
	code    string
	fleet   int
	groups  []lineGroup
	regions []region
}

// operators returns the operators of the simulated network. The fleets add up to 5,000
// vehicles at the morning peak.
func operators() []operatorSpec {
	return []operatorSpec{
		{code: "ARR", fleet: 1000, groups: []lineGroup{{bus, 300, 12, 40, 1}}, regions: []region{
			{"Limburg", 51.20, 5.90, 35}, {"Friesland", 53.10, 5.80, 40}, {"Zuid-Holland Noord", 52.15, 4.50, 20}, {"Brabant", 51.70, 5.30, 25}}},
		{code: "CXX", fleet: 1000, groups: []lineGroup{{bus, 330, 12, 40, 1}}, regions: []region{
			{"Noord-Holland Noord", 52.65, 4.85, 25}, {"Amstelland", 52.30, 4.75, 15}, {"Gelderland", 52.00, 5.90, 35},
			{"Zeeland", 51.45, 3.85, 25}, {"Eindhoven", 51.44, 5.48, 12}}},
		{code: "QBUZZ", fleet: 900, groups: []lineGroup{{bus, 220, 12, 40, 1}, {tram, 4, 15, 25, 20}}, regions: []region{
			{"Groningen-Drenthe", 53.10, 6.70, 45}, {"Utrecht", 52.09, 5.12, 12}, {"Drechtsteden", 51.81, 4.67, 12}}},
		{code: "GVB", fleet: 420, groups: []lineGroup{{tram, 14, 18, 32, 1}, {metro, 5, 8, 20, 50}, {bus, 40, 12, 30, 15}}, regions: []region{
			{"Amsterdam", 52.37, 4.89, 9}}},
		{code: "RET", fleet: 380, groups: []lineGroup{{tram, 9, 18, 32, 2}, {metro, 5, 8, 24, 100}, {bus, 38, 12, 30, 30}}, regions: []region{
			{"Rotterdam", 51.92, 4.48, 11}}},
		{code: "EBS", fleet: 380, groups: []lineGroup{{bus, 110, 12, 36, 1}}, regions: []region{
			{"Zaanstreek-Waterland", 52.47, 4.87, 18}, {"Haaglanden Streek", 52.00, 4.35, 15}}},
		{code: "KEOLIS", fleet: 360, groups: []lineGroup{{bus, 85, 12, 36, 1}}, regions: []region{
			{"Twente", 52.28, 6.80, 25}, {"Almere", 52.37, 5.22, 10}, {"IJssel-Vecht", 52.51, 6.10, 25}}},
		{code: "HTM", fleet: 230, groups: []lineGroup{{tram, 12, 18, 32, 1}, {bus, 10, 12, 26, 20}}, regions: []region{
			{"Den Haag", 52.07, 4.30, 8}}},
		{code: "NS", fleet: 330, groups: []lineGroup{{train, 70, 4, 14, 3000}}}, // runs between the stations of every region
	}
}

// DefaultStops is the number of stops (quays) of the network at scale 1, about the number in
// the Netherlands; DefaultStations the number of railway stations.
const (
	DefaultStops    = 45000
	DefaultStations = 400
)

// place is where a line stops: a pair of quays, one per direction (a railway station has one
// id for both).
type place struct {
	lat, lon float64
	ids      [2]string
}

// line is one route of an operator, run in both directions.
type line struct {
	id       string
	operator int // index into network.operators
	mode     mode
	places   []int32 // in direction 0 order
	segKm    []float64
}

// Operator is the public summary of an operator of the network.
type Operator struct {
	Code     string
	Lines    int
	Vehicles int // peak fleet at the network's scale
}

type network struct {
	operators []operatorSpec
	fleet     []int // peak fleet per operator at this scale
	places    []place
	lines     []line
	byOp      [][]int32 // lines per operator
}

// grid indexes places by cell for nearest-place lookups.
type grid struct {
	cells map[[2]int32][]int32
}

const (
	cellLat = 0.01
	cellLon = 0.015
)

func cellOf(lat, lon float64) [2]int32 {
	return [2]int32{int32(math.Floor(lat / cellLat)), int32(math.Floor(lon / cellLon))}
}

func (g *grid) add(i int32, lat, lon float64) {
	c := cellOf(lat, lon)
	g.cells[c] = append(g.cells[c], i)
}

// nearest returns the place closest to (lat, lon) that accept allows, searching rings of
// cells out to maxRing.
func (g *grid) nearest(places []place, lat, lon float64, maxRing int32, accept func(int32) bool) (int32, bool) {
	c := cellOf(lat, lon)
	best, bestD := int32(-1), math.Inf(1)
	for ring := int32(0); ring <= maxRing; ring++ {
		for dy := -ring; dy <= ring; dy++ {
			for dx := -ring; dx <= ring; dx++ {
				if max(abs32(dy), abs32(dx)) != ring {
					continue
				}
				for _, i := range g.cells[[2]int32{c[0] + dy, c[1] + dx}] {
					if !accept(i) {
						continue
					}
					if d := distKm(lat, lon, places[i].lat, places[i].lon); d < bestD || (d == bestD && i < best) {
						best, bestD = i, d
					}
				}
			}
		}
		// A place found in ring k can be beaten only by one within the next ring.
		if best >= 0 && ring >= 1 {
			return best, true
		}
	}
	return best, best >= 0
}

func abs32(v int32) int32 {
	if v < 0 {
		return -v
	}
	return v
}

// distKm is the equirectangular distance, plenty for a country this size.
func distKm(lat1, lon1, lat2, lon2 float64) float64 {
	x := (lon2 - lon1) * math.Cos((lat1+lat2)/2*math.Pi/180) * 111.2
	y := (lat2 - lat1) * 111.2
	return math.Hypot(x, y)
}

// bearingDeg is the initial bearing from the first point to the second, 0 to 360.
func bearingDeg(lat1, lon1, lat2, lon2 float64) float64 {
	x := (lon2 - lon1) * math.Cos((lat1+lat2)/2*math.Pi/180)
	y := lat2 - lat1
	if x == 0 && y == 0 {
		return 0
	}
	b := math.Atan2(x, y) * 180 / math.Pi
	if b < 0 {
		b += 360
	}
	return b
}

// offsetKm moves (lat, lon) by dy km north and dx km east.
func offsetKm(lat, lon, dy, dx float64) (float64, float64) {
	return lat + dy/111.2, lon + dx/(111.2*math.Cos(lat*math.Pi/180))
}

// clampNL keeps generated places inside the Netherlands with a margin, so that valid messages
// never fail the decoder's bounding box.
func clampNL(lat, lon float64) (float64, float64) {
	return min(max(lat, 50.80), 53.65), min(max(lon, 3.30), 7.15)
}

func scaled(n int, scale float64, least int) int {
	return max(least, int(math.Round(float64(n)*scale)))
}

// buildNetwork lays out places and lines for scale with rng. Everything is decided by rng in a
// fixed order, so the same seed and scale give the same network.
func buildNetwork(rng *rand.Rand, scale float64) *network {
	ops := operators()
	b := &netBuilder{rng: rng, scale: scale,
		n: &network{operators: ops, fleet: make([]int, len(ops)), byOp: make([][]int32, len(ops))}}
	total := b.regions()
	b.quays(total)
	b.railStations()
	b.lines()
	return b.n
}

// netBuilder holds a network while buildNetwork lays it out, step by step.
type netBuilder struct {
	rng   *rand.Rand
	scale float64
	n     *network

	regs        []*regionRef // every operator's regions, in operator order
	regionGrid  []*grid      // the quays of each region
	stationGrid *grid
	stations    []int32
	quayN       int // the quay ids handed out
}

// regionRef is a region of an operator's road and urban rail, with a weight for how many
// stops it gets, and its places once laid out.
type regionRef struct {
	op     int
	r      region
	weight float64
	places []int32
}

// regions sizes each operator's fleet and lists its regions, each weighted by the operator's
// stops (other than train stops) shared out evenly. It returns the sum of the weights.
func (b *netBuilder) regions() float64 {
	total := 0.0
	for oi, op := range b.n.operators {
		b.n.fleet[oi] = scaled(op.fleet, b.scale, 2)
		stops := 0.0
		for _, gr := range op.groups {
			if gr.mode != train {
				stops += float64(gr.count) * float64(gr.minStops+gr.maxStops) / 2
			}
		}
		for _, r := range op.regions {
			w := stops / float64(len(op.regions))
			b.regs = append(b.regs, &regionRef{op: oi, r: r, weight: w})
			total += w
		}
	}
	return total
}

// quays places the quays, at least 12 in each region and in all about the scale's share of
// DefaultStops (two quays a place), and indexes each region's in a grid.
func (b *netBuilder) quays(total float64) {
	quays := scaled(DefaultStops, b.scale, 0)
	for _, rr := range b.regs {
		k := max(12, int(math.Round(float64(quays)/2*rr.weight/total)))
		for range k {
			lat, lon := b.randomIn(rr.r)
			i := b.newPlace(lat, lon, false)
			rr.places = append(rr.places, i)
		}
	}
	b.regionGrid = make([]*grid, len(b.regs))
	for ri, rr := range b.regs {
		b.regionGrid[ri] = &grid{cells: make(map[[2]int32][]int32)}
		for _, i := range rr.places {
			b.regionGrid[ri].add(i, b.n.places[i].lat, b.n.places[i].lon)
		}
	}
}

// railStations places the railway stations, spread over every region.
func (b *netBuilder) railStations() {
	b.stationGrid = &grid{cells: make(map[[2]int32][]int32)}
	for k := range scaled(DefaultStations, b.scale, 8) {
		rr := b.regs[k%len(b.regs)]
		lat, lon := b.randomIn(rr.r)
		i := b.newPlace(lat, lon, true)
		b.stations = append(b.stations, i)
		b.stationGrid.add(i, lat, lon)
	}
}

// newPlace adds a place: a station with one id, or a stop with a quay id per direction.
func (b *netBuilder) newPlace(lat, lon float64, station bool) int32 {
	i := int32(len(b.n.places))
	p := place{lat: lat, lon: lon}
	if station {
		p.ids[0] = fmt.Sprintf("NL:S:%05d", 10000+int(i))
		p.ids[1] = p.ids[0]
	} else {
		p.ids[0] = fmt.Sprintf("NL:Q:%08d", 30000000+b.quayN)
		p.ids[1] = fmt.Sprintf("NL:Q:%08d", 30000001+b.quayN)
		b.quayN += 2
	}
	b.n.places = append(b.n.places, p)
	return i
}

// randomIn is a point drawn evenly from the disc of r, kept inside the Netherlands.
func (b *netBuilder) randomIn(r region) (float64, float64) {
	d := r.radiusKm * math.Sqrt(b.rng.Float64())
	a := b.rng.Float64() * 2 * math.Pi
	return clampNL(offsetKm(r.lat, r.lon, d*math.Cos(a), d*math.Sin(a)))
}

// lines lays out every operator's lines, group by group: trains between stations, the other
// modes within one of the operator's regions. A line that cannot get two stops in five tries
// is left out.
func (b *netBuilder) lines() {
	rng, n := b.rng, b.n
	for oi, op := range n.operators {
		var opRegions []int
		for ri, rr := range b.regs {
			if rr.op == oi {
				opRegions = append(opRegions, ri)
			}
		}
		for _, gr := range op.groups {
			for k := range scaled(gr.count, b.scale, 1) {
				stops := gr.minStops + rng.IntN(gr.maxStops-gr.minStops+1)
				var path []int32
				for try := 0; try < 5 && len(path) < 2; try++ {
					if gr.mode == train {
						path = b.walk(b.stationGrid, b.stations, train, false, region{}, stops)
					} else {
						ri := opRegions[rng.IntN(len(opRegions))]
						path = b.walk(b.regionGrid[ri], b.regs[ri].places, gr.mode, b.regs[ri].r.urban(), b.regs[ri].r, stops)
					}
				}
				if len(path) < 2 {
					continue
				}
				l := line{id: fmt.Sprintf("%s:%d", op.code, gr.firstNumber+k), operator: oi, mode: gr.mode, places: path}
				for j := 1; j < len(path); j++ {
					from, to := n.places[path[j-1]], n.places[path[j]]
					l.segKm = append(l.segKm, distKm(from.lat, from.lon, to.lat, to.lon))
				}
				n.byOp[oi] = append(n.byOp[oi], int32(len(n.lines)))
				n.lines = append(n.lines, l)
			}
		}
	}
}

// walk lays out a line of up to stops places: from a random place of starts in a random
// heading, snapping each step to the nearest place of gr not yet on the line, and turning back
// towards center (when it has a radius) once outside it.
func (b *netBuilder) walk(gr *grid, starts []int32, m mode, urban bool, center region, stops int) []int32 {
	rng, n := b.rng, b.n
	start := starts[rng.IntN(len(starts))]
	on := map[int32]bool{start: true}
	path := []int32{start}
	heading := rng.Float64() * 2 * math.Pi
	step := m.spacingKm(urban)
	lat, lon := n.places[start].lat, n.places[start].lon
	maxRing := int32(math.Ceil(step*3/1.1)) + 2
	for len(path) < stops {
		heading += rng.NormFloat64() * 0.35
		if center.radiusKm > 0 && distKm(lat, lon, center.lat, center.lon) > center.radiusKm {
			heading = bearingDeg(lat, lon, center.lat, center.lon)*math.Pi/180 + rng.NormFloat64()*0.5
		}
		tlat, tlon := clampNL(offsetKm(lat, lon, step*math.Cos(heading), step*math.Sin(heading)))
		next, ok := gr.nearest(n.places, tlat, tlon, maxRing, func(i int32) bool { return !on[i] })
		if !ok {
			break
		}
		on[next] = true
		path = append(path, next)
		lat, lon = n.places[next].lat, n.places[next].lon
	}
	return path
}

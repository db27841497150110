package observe

import "github.com/schedscope/schedscope/pkg/record"

// point is an extension point, as an index.
type point int

const (
	pointPreFilter point = iota
	pointFilter
	pointPostFilter
	pointPreScore
	pointScore
	pointNormalizeScore
	pointReserve
	pointUnreserve
	pointPermit
	pointWaitOnPermit
	pointPreBind
	pointBind
	pointPostBind
	numPoints
)

var pointNames = [numPoints]string{
	record.PreFilter, record.Filter, record.PostFilter, record.PreScore, record.Score, record.NormalizeScore,
	record.Reserve, record.Unreserve, record.Permit, record.WaitOnPermit, record.PreBind, record.Bind, record.PostBind,
}

func (p point) String() string { return pointNames[p] }

package sweep

import "github.com/kalab-dev/kalab/cmd/kalab/internal/sweep/geometry"

// Prediction and Region are the geometry's (engine of the sweep's bands and probes), as a
// sweep's record carries them.
type (
	Prediction = geometry.Prediction
	Region     = geometry.Region
)

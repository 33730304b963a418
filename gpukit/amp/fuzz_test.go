package amp_test

import (
	"math"
	"strings"
	"testing"

	"github.com/gpumem/course/gpukit/amp"
)

// FuzzGradScaler builds scalers from arbitrary settings: amp's error, or a
// scaler whose scale stays positive and within float32's range (PyTorch
// keeps it in a float32 tensor) through clean updates.
func FuzzGradScaler(f *testing.F) {
	f.Add(65536.0, 2.0, 0.5, 1)
	f.Add(math.MaxFloat32, math.Inf(1), 0.0, 0)
	f.Fuzz(func(t *testing.T, initScale, growth, backoff float64, interval int) {
		s, err := amp.NewGradScaler(amp.GradScalerConfig{InitScale: initScale, GrowthFactor: growth, BackoffFactor: backoff, GrowthInterval: interval})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "amp: ") {
				t.Fatalf("error without the package's prefix: %v", err)
			}
			return
		}
		for range 64 {
			s.MarkScaledForTest()
			s.Update()
			if sc := s.GetScale(); !(sc > 0) || sc > math.MaxFloat32 {
				t.Fatalf("scale %v after clean updates from %v, growth %v every %d", sc, initScale, growth, interval)
			}
		}
	})
}

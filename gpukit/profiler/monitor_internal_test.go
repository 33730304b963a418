package profiler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The monitor keeps at most limit samples: a run of 1000 ticks in 8
// samples keeps its span (the first sample's time) and its peak.
func TestMonitorMemoryIsBounded(t *testing.T) {
	d := downsampled{limit: 8}
	for i := range 1000 {
		alloc := int64(i % 97)
		if i == 613 {
			alloc = 5000
		}
		d.add(Sample{Time: time.Duration(i), Allocated: alloc, Reserved: int64(i)})
	}
	assert.LessOrEqual(t, len(d.buf), 8)
	assert.GreaterOrEqual(t, len(d.buf), 4)
	assert.Equal(t, time.Duration(0), d.buf[0].Time)
	assert.EqualValues(t, 5000, MaxSampled(d.buf), "the peak survives downsampling")
	assert.EqualValues(t, 999, d.buf[len(d.buf)-1].Reserved, "the newest tick is in the last sample")
	for i := 1; i < len(d.buf); i++ {
		assert.Equal(t, time.Duration(d.stride*i), d.buf[i].Time, "sample %d starts its interval of %d ticks", i, d.stride)
	}
}

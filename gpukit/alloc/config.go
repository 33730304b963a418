package alloc

import (
	"fmt"
	"math"
	"math/bits"
	"os"
	"strconv"
	"strings"
)

// Size constants of the caching policy (the values PyTorch uses).
const (
	MinBlockSize  = 512                 // every size is rounded up to a multiple of this
	SmallSize     = 1 << 20             // requests up to this size use the small pool
	SmallBuffer   = 2 << 20             // segment size of the small pool
	LargeBuffer   = 20 << 20            // segment size for large requests below MinLargeAlloc
	MinLargeAlloc = 10 << 20            // from this size on, segments are sized to the request
	RoundLarge    = 2 << 20             // large segments are rounded up to this
	mib           = int64(1) << 20      // one MiB
	maxSplitMB    = math.MaxInt64 >> 20 // largest max_split_size_mb that fits in int64 bytes
)

// RoundupIntervals is the number of size classes of roundup_power2_divisions.
// Class i holds sizes in [2^i MiB, 2^(i+1) MiB); class 0 also holds every
// size below 1 MiB and the last class every size from 32 GiB on.
const RoundupIntervals = 16

// EnvVar is the environment variable that ConfigFromEnv reads. Its syntax is
// that of PYTORCH_CUDA_ALLOC_CONF.
const EnvVar = "GPUKIT_ALLOC_CONF"

// Config holds the allocator settings of PYTORCH_CUDA_ALLOC_CONF. The zero
// Config is PyTorch's default.
type Config struct {
	// MaxSplitSize in bytes: cached blocks of at least this size are never
	// split, and requests below it never take them. 0 means unlimited.
	// Set from code, it must be 0 or at least 20 MiB, like max_split_size_mb.
	MaxSplitSize int64
	// GarbageCollectionThreshold in (0, 1), or 0 for off. It only acts when
	// a memory fraction is set (SetMemoryFraction), as in PyTorch.
	GarbageCollectionThreshold float64
	// RoundupPower2Divisions per size class (see RoundupIntervals): 0 or 1
	// means plain rounding to 512 bytes; N > 1 (a power of two) rounds a
	// request up to the next of N equal divisions between two powers of two.
	RoundupPower2Divisions [RoundupIntervals]int
	// ExpandableSegments is PyTorch's expandable_segments: one growable
	// segment per stream and pool, whose pages are mapped and unmapped as
	// needed (see expandable.go). It needs a Memory that implements
	// PageMemory; on others the allocator warns and ignores it, as PyTorch
	// does on a platform without the CUDA driver API.
	ExpandableSegments bool
}

// ConfigError is a refused setting. Its message names the key, the value and
// the valid range.
type ConfigError struct {
	Key, Value string
	Reason     string
}

func (e *ConfigError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("alloc: config key %q: %s", e.Key, e.Reason)
	}
	return fmt.Sprintf("alloc: config %s:%s: %s", e.Key, e.Value, e.Reason)
}

var validKeys = "max_split_size_mb, garbage_collection_threshold, roundup_power2_divisions, expandable_segments"

// ParseConfig parses settings in the PYTORCH_CUDA_ALLOC_CONF syntax, for
// example "max_split_size_mb:128,garbage_collection_threshold:0.6" or
// "roundup_power2_divisions:[256:1,512:2,>:8]". Spaces are ignored; an empty
// string gives the default Config. A key or value that PyTorch would refuse
// and an unknown key are refused with a *ConfigError. As in PyTorch,
// expandable_segments takes exactly True or False and combines with every
// other key; with max_split_size_mb the oversize rules still apply to
// expandable segments' blocks when they are looked up, although they are
// split as the small pool's are (pytorch/pytorch issue 123548).
//
// As in PyTorch, in the bracketed form each "MB:N" entry sets the size class
// that starts at MB MiB, the first entry also sets every class below it, and
// ">:N" sets every class from the previous entry's class on (that class
// included, a quirk of PyTorch's parser that gpukit keeps).
func ParseConfig(s string) (Config, error) {
	var c Config
	toks := lexConfig(s)
	for i := 0; i < len(toks); i++ {
		key := toks[i]
		if key == "," || key == ":" || key == "[" || key == "]" {
			return Config{}, &ConfigError{Key: key, Reason: "expected a key, one of " + validKeys}
		}
		if i+1 >= len(toks) || toks[i+1] != ":" {
			return Config{}, &ConfigError{Key: key, Reason: "expected ':' and a value after the key"}
		}
		i += 2
		if i >= len(toks) {
			return Config{}, &ConfigError{Key: key, Reason: "missing value"}
		}
		val := toks[i]
		var err error
		switch key {
		case "max_split_size_mb":
			c.MaxSplitSize, err = parseMaxSplit(val)
		case "garbage_collection_threshold":
			c.GarbageCollectionThreshold, err = parseGCThreshold(val)
		case "roundup_power2_divisions":
			if val == "[" {
				i, err = parseDivisionList(toks, i, &c.RoundupPower2Divisions)
			} else {
				var n int
				n, err = parseDivisions(key, val, false)
				for j := range c.RoundupPower2Divisions {
					c.RoundupPower2Divisions[j] = n
				}
			}
		case "expandable_segments":
			switch val {
			case "True":
				c.ExpandableSegments = true
			case "False":
				c.ExpandableSegments = false
			default:
				err = &ConfigError{Key: key, Value: val, Reason: "expected True or False"}
			}
		default:
			err = &ConfigError{Key: key, Reason: "unknown key; valid keys are " + validKeys}
		}
		if err != nil {
			return Config{}, err
		}
		if i+1 < len(toks) {
			i++
			if toks[i] != "," {
				return Config{}, &ConfigError{Key: key, Value: val, Reason: fmt.Sprintf("expected ',' before %q", toks[i])}
			}
		}
	}
	return c, nil
}

// ConfigFromEnv parses the GPUKIT_ALLOC_CONF environment variable; unset or
// empty gives the default Config.
func ConfigFromEnv() (Config, error) {
	c, err := ParseConfig(os.Getenv(EnvVar))
	if err != nil {
		return Config{}, fmt.Errorf("%w (from %s)", err, EnvVar)
	}
	return c, nil
}

// lexConfig splits s at ',', ':', '[' and ']' (kept as tokens) and drops
// spaces, as PyTorch's lexer does.
func lexConfig(s string) []string {
	var toks []string
	var buf strings.Builder
	flush := func() {
		if buf.Len() > 0 {
			toks = append(toks, buf.String())
			buf.Reset()
		}
	}
	for _, r := range s {
		switch r {
		case ',', ':', '[', ']':
			flush()
			toks = append(toks, string(r))
		case ' ':
		default:
			buf.WriteRune(r)
		}
	}
	flush()
	return toks
}

func parseMaxSplit(val string) (int64, error) {
	const key = "max_split_size_mb"
	n, err := strconv.ParseInt(val, 10, 64)
	if err != nil && !isRangeErr(err) {
		return 0, &ConfigError{Key: key, Value: val, Reason: "expected an integer number of MiB >= 20"}
	}
	if n < LargeBuffer>>20 {
		return 0, &ConfigError{Key: key, Value: val, Reason: "too small, must be >= 20 (MiB)"}
	}
	if n > maxSplitMB || isRangeErr(err) {
		n = maxSplitMB
	}
	return n << 20, nil
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

func parseGCThreshold(val string) (float64, error) {
	f, err := strconv.ParseFloat(val, 64)
	if err != nil || !(f > 0 && f < 1) {
		return 0, &ConfigError{Key: "garbage_collection_threshold", Value: val, Reason: "must be a number in the open interval (0.0, 1.0)"}
	}
	return f, nil
}

// maxDivisions bounds roundup_power2_divisions so that size arithmetic cannot
// overflow; PyTorch has no bound, but no useful value comes near it.
const maxDivisions = 1 << 30

func parseDivisions(key, val string, zeroOK bool) (int, error) {
	n, err := strconv.ParseInt(val, 10, 64)
	ok := err == nil && n >= 0 && n <= maxDivisions && (n&(n-1)) == 0 && (zeroOK || n > 0)
	if !ok {
		want := "a power of two between 1 and 2^30"
		if zeroOK {
			want = "0 (no roundup) or a power of two up to 2^30"
		}
		return 0, &ConfigError{Key: key, Value: val, Reason: "divisions must be " + want}
	}
	return int(n), nil
}

// parseDivisionList parses "[MB:N,...,>:N]" starting at toks[i] == "[" and
// returns the index of the closing "]".
func parseDivisionList(toks []string, i int, out *[RoundupIntervals]int) (int, error) {
	const key = "roundup_power2_divisions"
	first := true
	last := 0
	i++ // past "["
	for ; i < len(toks) && toks[i] != "]"; i++ {
		interval := toks[i]
		if i+2 >= len(toks) || toks[i+1] != ":" {
			return i, &ConfigError{Key: key, Value: interval, Reason: "expected MB:divisions entries such as [256:1,512:2,>:8]"}
		}
		i += 2
		n, err := parseDivisions(key, toks[i], true)
		if err != nil {
			return i, err
		}
		if interval == ">" {
			for j := last; j < RoundupIntervals; j++ {
				out[j] = n
			}
		} else {
			mb, err := strconv.ParseUint(interval, 10, 64)
			if err != nil || mb == 0 || mb&(mb-1) != 0 {
				return i, &ConfigError{Key: key, Value: interval, Reason: "size classes must be a power of two in MiB (1, 2, 4, ... 32768) or '>'"}
			}
			idx := min(bits.Len64(mb)-1, RoundupIntervals-1)
			if first {
				for j := 0; j < idx; j++ {
					out[j] = n
				}
				first = false
			}
			out[idx] = n
			last = idx
		}
		if i+1 < len(toks) && toks[i+1] != "]" {
			i++
			if toks[i] != "," {
				return i, &ConfigError{Key: key, Value: toks[i], Reason: "expected ',' between entries"}
			}
		}
	}
	if i >= len(toks) {
		return i, &ConfigError{Key: key, Value: "[", Reason: "missing closing ']'"}
	}
	return i, nil
}

// Validate reports whether c is a Config that ParseConfig could produce.
func (c Config) Validate() error {
	if c.MaxSplitSize != 0 && c.MaxSplitSize < LargeBuffer {
		return &ConfigError{Key: "max_split_size_mb", Value: strconv.FormatInt(c.MaxSplitSize>>20, 10) + " (MaxSplitSize " + strconv.FormatInt(c.MaxSplitSize, 10) + " B)", Reason: "must be 0 (unlimited) or >= 20 MiB"}
	}
	if g := c.GarbageCollectionThreshold; g != 0 && !(g > 0 && g < 1) {
		return &ConfigError{Key: "garbage_collection_threshold", Value: strconv.FormatFloat(g, 'g', -1, 64), Reason: "must be 0 (off) or in the open interval (0.0, 1.0)"}
	}
	for i, n := range c.RoundupPower2Divisions {
		if n < 0 || n > maxDivisions || n&(n-1) != 0 {
			return &ConfigError{Key: "roundup_power2_divisions", Value: strconv.Itoa(n), Reason: fmt.Sprintf("class %d: divisions must be 0 or a power of two up to 2^30", i)}
		}
	}
	return nil
}

// String returns c in the PYTORCH_CUDA_ALLOC_CONF syntax; ParseConfig of the
// result gives c back. The default Config gives "".
func (c Config) String() string {
	var parts []string
	if c.MaxSplitSize > 0 {
		parts = append(parts, "max_split_size_mb:"+strconv.FormatInt(c.MaxSplitSize>>20, 10))
	}
	if c.GarbageCollectionThreshold != 0 {
		parts = append(parts, "garbage_collection_threshold:"+strconv.FormatFloat(c.GarbageCollectionThreshold, 'g', -1, 64))
	}
	if d := c.divisionsString(); d != "" {
		parts = append(parts, "roundup_power2_divisions:"+d)
	}
	if c.ExpandableSegments {
		parts = append(parts, "expandable_segments:True")
	}
	return strings.Join(parts, ",")
}

func (c Config) divisionsString() string {
	d := c.RoundupPower2Divisions
	// j: last class of the leading run; k: first class of the trailing run.
	j := 0
	for j+1 < RoundupIntervals && d[j+1] == d[0] {
		j++
	}
	if j == RoundupIntervals-1 {
		if d[0] == 0 {
			return ""
		}
		return strconv.Itoa(d[0])
	}
	k := RoundupIntervals - 1
	for k > 0 && d[k-1] == d[RoundupIntervals-1] {
		k--
	}
	var parts []string
	for i := j; i <= k; i++ {
		parts = append(parts, fmt.Sprintf("%d:%d", int64(1)<<i, d[i]))
	}
	if k < RoundupIntervals-1 {
		parts = append(parts, fmt.Sprintf(">:%d", d[k]))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Divisions returns the roundup_power2_divisions that apply to size.
func (c Config) Divisions(size int64) int {
	if size <= 0 {
		return c.RoundupPower2Divisions[0]
	}
	idx := bits.Len64(uint64(size)) - 1 - 20
	idx = max(0, min(idx, RoundupIntervals-1))
	return c.RoundupPower2Divisions[idx]
}

// MaxRequest is the largest request the allocator can represent: 4 EiB,
// far beyond any device. Rounding a larger size up to a power-of-two
// division or a 2 MiB segment would not fit in an int64, so Malloc answers
// such a request with an *OutOfMemoryError without asking the device, as
// PyTorch answers a request no device can hold.
const MaxRequest = int64(1) << 62

// RoundSize returns the block size the allocator uses for a request of size
// bytes: at least 512, a multiple of 512, or with roundup_power2_divisions
// the next power-of-two division. A size above MaxRequest has no block size
// and gives -1.
func (c Config) RoundSize(size int64) int64 {
	if size > MaxRequest {
		return -1
	}
	if size < MinBlockSize {
		return MinBlockSize
	}
	div := int64(c.Divisions(size))
	if div > 1 && size > MinBlockSize*div {
		return roundupPower2Division(size, div)
	}
	return MinBlockSize * ((size + MinBlockSize - 1) / MinBlockSize)
}

func roundupPower2Division(size, div int64) int64 {
	if size&(size-1) == 0 {
		return size
	}
	floor := int64(1) << (bits.Len64(uint64(size)) - 1)
	step := floor >> (bits.Len64(uint64(div)) - 1)
	if step == 0 {
		return floor << 1
	}
	down := size &^ (step - 1)
	if down == size {
		return size
	}
	return down + step
}

// SegmentSize returns the size of the device segment that the allocator
// requests for a rounded block size: 2 MiB for the small pool, 20 MiB for
// large blocks below 10 MiB, else the size rounded up to 2 MiB. A size above
// MaxRequest gives -1.
func SegmentSize(rounded int64) int64 {
	switch {
	case rounded > MaxRequest:
		return -1
	case rounded <= SmallSize:
		return SmallBuffer
	case rounded < MinLargeAlloc:
		return LargeBuffer
	default:
		return RoundLarge * ((rounded + RoundLarge - 1) / RoundLarge)
	}
}

// settings returns the config as the allocator_settings map of a snapshot.
func (c Config) settings() map[string]any {
	maxSplit := int64(-1) // PyTorch reports SIZE_MAX, which is -1 as int64
	if c.MaxSplitSize > 0 {
		maxSplit = c.MaxSplitSize
	}
	div := make(map[string]any, RoundupIntervals)
	for i, n := range c.RoundupPower2Divisions {
		div[strconv.FormatInt(int64(1)<<i, 10)+"MB"] = int64(n)
	}
	return map[string]any{
		"PYTORCH_CUDA_ALLOC_CONF":      c.String(),
		"max_split_size":               maxSplit,
		"garbage_collection_threshold": c.GarbageCollectionThreshold,
		"expandable_segments":          c.ExpandableSegments,
		"roundup_power2_divisions":     div,
	}
}

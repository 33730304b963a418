package data

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"unsafe"

	"github.com/gpumem/course/internal/atomicfile"
)

// Shard format, version 1, little-endian:
//
//	offset 0   magic   "GPKSHARD" (8 bytes)
//	offset 8   version uint32 (1)
//	offset 12  dtype   uint32 (1 = float32)
//	offset 16  ndim    uint32 (at most MaxShardDims)
//	offset 20  dims    ndim × uint64, the shape of one item
//	then       count   uint64, the number of items
//	then       count items of prod(dims) values each, row-major
//
// A reader knows from the header exactly how long the file must be, so a
// truncated or padded shard is found before any item is read.
const (
	shardMagic   = "GPKSHARD"
	shardVersion = 1
	// MaxShardDims bounds the rank of a shard's items.
	MaxShardDims = 8
)

// Dtype is the element type of a shard.
type Dtype uint32

// Float32 is the only dtype shards hold today.
const Float32 Dtype = 1

func (d Dtype) String() string {
	if d == Float32 {
		return "float32"
	}
	return fmt.Sprintf("Dtype(%d)", uint32(d))
}

// ShardHeader describes a shard: its dtype, the shape of one item and the
// number of items.
type ShardHeader struct {
	Dtype     Dtype
	ItemShape []int
	Count     int
}

func (h ShardHeader) headerSize() int64 { return 8 + 4 + 4 + 4 + 8*int64(len(h.ItemShape)) + 8 }

// WriteShard writes the first count items of ds to path, through a
// temporary file that is synced and renamed, so a crash leaves either the
// old file or the whole new one. Every item must have itemShape.
func WriteShard(path string, ds Dataset, itemShape []int) error {
	if ds == nil {
		return errors.New("data: WriteShard: nil data set")
	}
	if len(itemShape) > MaxShardDims {
		return fmt.Errorf("data: WriteShard %s: items of rank %d; at most %d dimensions", path, len(itemShape), MaxShardDims)
	}
	size, err := numel(itemShape)
	if err != nil {
		return fmt.Errorf("data: WriteShard %s: %w", path, err)
	}
	if size == 0 {
		return fmt.Errorf("data: WriteShard %s: items of shape %v hold no values", path, itemShape)
	}
	h := ShardHeader{Dtype: Float32, ItemShape: slices.Clone(itemShape), Count: ds.Len()}
	return atomicfile.Write(path, 0o644, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		if err := writeHeader(bw, h); err != nil {
			return err
		}
		buf := make([]byte, 4*size)
		for i := range h.Count {
			it, err := ds.Item(i)
			if err != nil {
				return fmt.Errorf("data: WriteShard %s: item %d: %w", path, i, err)
			}
			if !slices.Equal(it.Shape, itemShape) || len(it.Data) != size {
				return fmt.Errorf("data: WriteShard %s: item %d has shape %v, the shard's items have shape %v", path, i, it.Shape, itemShape)
			}
			for j, v := range it.Data {
				binary.LittleEndian.PutUint32(buf[4*j:], math.Float32bits(v))
			}
			if _, err := bw.Write(buf); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
}

func writeHeader(w io.Writer, h ShardHeader) error {
	b := make([]byte, 0, h.headerSize())
	b = append(b, shardMagic...)
	b = binary.LittleEndian.AppendUint32(b, shardVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(h.Dtype))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(h.ItemShape)))
	for _, d := range h.ItemShape {
		b = binary.LittleEndian.AppendUint64(b, uint64(d))
	}
	b = binary.LittleEndian.AppendUint64(b, uint64(h.Count))
	_, err := w.Write(b)
	return err
}

// CorruptShardError reports a shard that cannot be read: its file, the byte
// offset where reading went wrong, and why.
type CorruptShardError struct {
	Path   string
	Offset int64
	Reason string
}

func (e *CorruptShardError) Error() string {
	return fmt.Sprintf("data: shard %s is corrupt at byte %d: %s", e.Path, e.Offset, e.Reason)
}

// ReadShardHeader reads and checks the header of the shard in f (of the
// given size), and checks that the file is exactly as long as the header
// says.
func ReadShardHeader(path string, r io.ReaderAt, size int64) (ShardHeader, error) {
	if r == nil {
		return ShardHeader{}, fmt.Errorf("data: shard %s: nil reader", path)
	}
	bad := func(off int64, format string, args ...any) (ShardHeader, error) {
		return ShardHeader{}, &CorruptShardError{Path: path, Offset: off, Reason: fmt.Sprintf(format, args...)}
	}
	fixed := make([]byte, 20)
	if n, err := r.ReadAt(fixed, 0); n < len(fixed) {
		if err != nil && !errors.Is(err, io.EOF) {
			return ShardHeader{}, fmt.Errorf("data: shard %s: %w", path, err)
		}
		return bad(int64(n), "file of %d bytes ends inside the header", size)
	}
	if string(fixed[:8]) != shardMagic {
		return bad(0, "magic is %q, want %q (not a gpukit shard)", fixed[:8], shardMagic)
	}
	if v := binary.LittleEndian.Uint32(fixed[8:]); v != shardVersion {
		return bad(8, "version %d; this reader knows version %d", v, shardVersion)
	}
	h := ShardHeader{Dtype: Dtype(binary.LittleEndian.Uint32(fixed[12:]))}
	if h.Dtype != Float32 {
		return bad(12, "dtype %v; shards hold float32", h.Dtype)
	}
	ndim := binary.LittleEndian.Uint32(fixed[16:])
	if ndim > MaxShardDims {
		return bad(16, "%d dimensions; at most %d", ndim, MaxShardDims)
	}
	rest := make([]byte, 8*int(ndim)+8)
	if n, err := r.ReadAt(rest, 20); n < len(rest) {
		if err != nil && !errors.Is(err, io.EOF) {
			return ShardHeader{}, fmt.Errorf("data: shard %s: %w", path, err)
		}
		return bad(20+int64(n), "file of %d bytes ends inside the header", size)
	}
	h.ItemShape = make([]int, ndim)
	itemBytes := uint64(4)
	for i := range h.ItemShape {
		d := binary.LittleEndian.Uint64(rest[8*i:])
		if d > math.MaxInt32 || (d != 0 && itemBytes > math.MaxInt64/d) {
			return bad(20+8*int64(i), "dimension %d of %d is too large", i, d)
		}
		h.ItemShape[i] = int(d)
		itemBytes *= d
	}
	// Items without values would let 36 bytes claim 2^62 of them, which
	// no loader can order or index.
	if itemBytes == 0 {
		return bad(20, "items of shape %v hold no values", h.ItemShape)
	}
	count := binary.LittleEndian.Uint64(rest[8*ndim:])
	hs := h.headerSize()
	if count > uint64(math.MaxInt64-hs)/itemBytes {
		return bad(20+8*int64(ndim), "item count %d is too large", count)
	}
	h.Count = int(count)
	want := hs + int64(count*itemBytes)
	switch {
	case size < want:
		return bad(size, "truncated: the header promises %d items of %d bytes (%d bytes in all), the file has %d", count, itemBytes, want, size)
	case size > want:
		return bad(want, "%d bytes after the last of %d items", size-want, count)
	}
	return h, nil
}

// ShardDataset reads items lazily from one or more shard files: only the
// headers are read when it is opened, and each Item reads its own bytes,
// so a data set larger than memory can be streamed. All shards must hold
// float32 items of the same shape.
type ShardDataset struct {
	shards    []shard
	itemShape []int
	itemSize  int // values per item
	n         int

	mu     sync.Mutex
	closed bool
}

type shard struct {
	path  string
	f     *os.File
	first int   // index of its first item in the data set
	data  int64 // offset of its first item in the file
	count int
}

// OpenShards opens the shards at paths, in order, and checks their
// headers and sizes. Close it when done.
func OpenShards(paths ...string) (*ShardDataset, error) {
	if len(paths) == 0 {
		return nil, fmt.Errorf("data: OpenShards: no shard files given")
	}
	ds := &ShardDataset{}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			ds.Close()
			return nil, fmt.Errorf("data: OpenShards: %w", err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			ds.Close()
			return nil, fmt.Errorf("data: OpenShards: %w", err)
		}
		h, err := ReadShardHeader(p, f, st.Size())
		if err != nil {
			f.Close()
			ds.Close()
			return nil, err
		}
		if len(ds.shards) == 0 {
			ds.itemShape = h.ItemShape
			ds.itemSize, _ = numel(h.ItemShape) // checked by ReadShardHeader
		} else if !slices.Equal(h.ItemShape, ds.itemShape) {
			f.Close()
			ds.Close()
			return nil, fmt.Errorf("data: OpenShards: %s holds items of shape %v, %s items of shape %v", p, h.ItemShape, ds.shards[0].path, ds.itemShape)
		}
		if ds.n > math.MaxInt-h.Count {
			f.Close()
			ds.Close()
			return nil, fmt.Errorf("data: OpenShards: more items than an int can count")
		}
		ds.shards = append(ds.shards, shard{path: p, f: f, first: ds.n, data: h.headerSize(), count: h.Count})
		ds.n += h.Count
	}
	return ds, nil
}

// Len returns the number of items in all shards.
func (ds *ShardDataset) Len() int { return ds.n }

// ItemShape returns the shape of every item.
func (ds *ShardDataset) ItemShape() []int { return slices.Clone(ds.itemShape) }

// Item reads item i from its shard.
func (ds *ShardDataset) Item(i int) (Item, error) {
	it := Item{Shape: ds.itemShape, Data: make([]float32, ds.itemSize)}
	return it, ds.ReadItem(i, it.Data)
}

// ReadItem reads item i into dst, which must hold exactly one item.
func (ds *ShardDataset) ReadItem(i int, dst []float32) error {
	if len(dst) != ds.itemSize {
		return fmt.Errorf("data: ShardDataset: ReadItem into %d values; an item has %d", len(dst), ds.itemSize)
	}
	return ds.ReadItems(i, 1, dst)
}

// ReadItems reads the n items first, first+1, ... into dst (n items'
// worth of values), with one read per shard they span.
func (ds *ShardDataset) ReadItems(first, n int, dst []float32) error {
	if first < 0 || n < 0 || first > ds.n-n {
		return fmt.Errorf("data: ShardDataset: items [%d, %d) out of range [0, %d)", first, first+n, ds.n)
	}
	if len(dst) != n*ds.itemSize {
		return fmt.Errorf("data: ShardDataset: ReadItems of %d items into %d values; they have %d", n, len(dst), n*ds.itemSize)
	}
	for n > 0 {
		k, _ := slices.BinarySearchFunc(ds.shards, first, func(s shard, i int) int {
			switch {
			case s.first+s.count <= i:
				return -1
			case s.first > i:
				return 1
			}
			return 0
		})
		s := ds.shards[k]
		m := min(n, s.first+s.count-first)
		if err := s.read(first-s.first, dst[:m*ds.itemSize], ds.itemSize); err != nil {
			return err
		}
		dst = dst[m*ds.itemSize:]
		first += m
		n -= m
	}
	return nil
}

// read reads items from item i of the shard into dst.
func (s shard) read(i int, dst []float32, itemSize int) error {
	if len(dst) == 0 {
		return nil
	}
	off := s.data + int64(i)*int64(4*itemSize)
	var buf []byte
	if littleEndian {
		buf = unsafe.Slice((*byte)(unsafe.Pointer(&dst[0])), 4*len(dst)) // no conversion needed
	} else {
		buf = make([]byte, 4*len(dst))
	}
	if n, err := s.f.ReadAt(buf, off); n < len(buf) {
		if errors.Is(err, io.EOF) {
			return &CorruptShardError{Path: s.path, Offset: off + int64(n), Reason: fmt.Sprintf("item %d is cut short (the file shrank after it was opened)", s.first+i+n/(4*itemSize))}
		}
		return fmt.Errorf("data: shard %s: item %d at byte %d: %w", s.path, s.first+i, off, err)
	}
	if !littleEndian {
		for j := range dst {
			dst[j] = math.Float32frombits(binary.LittleEndian.Uint32(buf[4*j:]))
		}
	}
	return nil
}

// littleEndian reports whether this machine stores float32 as shards do.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// Close closes the shard files.
func (ds *ShardDataset) Close() error {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.closed {
		return nil
	}
	ds.closed = true
	var first error
	for _, s := range ds.shards {
		if err := s.f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

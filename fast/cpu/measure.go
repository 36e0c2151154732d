package cpu

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/lily-engine/lily/internal/safetensors"
)

// minBandwidthBytes is the smallest buffer MeasureReadBandwidth streams: 8× a 32 MiB last-level
// cache. bandwidthBytes raises it to twice the last-level cache where the machine's is larger (some
// VMs report caches of hundreds of MiB; a buffer smaller than the cache is read back partly from it
// and overstates the bandwidth).
const minBandwidthBytes = 256 << 20

// bandwidthBytes returns the streaming-read buffer size: at least minBandwidthBytes and twice the
// largest cache Linux lists for CPU 0 (other systems: minBandwidthBytes).
func bandwidthBytes() int {
	return max(minBandwidthBytes, 2*largestCache("/sys/devices/system/cpu/cpu0/cache"))
}

// largestCache returns the largest "size" (like "491520K") among dir's index*/ entries, in bytes;
// 0 when there are none or they do not parse.
func largestCache(dir string) int {
	sizes, _ := filepath.Glob(filepath.Join(dir, "index*", "size"))
	best := 0
	for _, f := range sizes {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s, mult := strings.TrimSpace(string(b)), 1
		switch {
		case strings.HasSuffix(s, "K"):
			s, mult = s[:len(s)-1], 1<<10
		case strings.HasSuffix(s, "M"):
			s, mult = s[:len(s)-1], 1<<20
		}
		if n, err := strconv.Atoi(s); err == nil && n > 0 && n <= 1<<30/mult {
			best = max(best, n*mult)
		}
	}
	return best
}

// MeasureReadBandwidth returns the streaming-read bandwidth in GB/s (1e9 bytes/s) that p's workers
// reach together on a buffer at least twice the last-level cache (bandwidthBytes): the best of
// several passes, each summing every byte (workers take contiguous 1 MiB chunks); 0 when the buffer
// cannot be mapped. It maps and fills the buffer (NewReadBuffer; ≈0.2 s per 256 MiB), unmaps it
// before it returns, and is meant for the bench command, once per run.
func MeasureReadBandwidth(p *Pool) float64 {
	buf, free, err := NewReadBuffer(bandwidthBytes())
	if err != nil {
		return 0
	}
	defer free()
	FillBandwidthBuffer(buf)
	return readBandwidthBest(p, New(p).f, buf, 5)
}

// NewReadBuffer returns a streaming-read buffer of bytes/8 words mapped as the checkpoint's weights
// are, in huge pages where the system has them (mapReadBytes), and the function that releases it;
// the buffer must not be used after free. A caller that measures again and again maps one of
// BandwidthBytes.
func NewReadBuffer(bytes int) (buf []uint64, free func(), err error) {
	b, free, err := mapReadBytes(bytes / 8 * 8)
	if err != nil {
		return nil, nil, err
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8), free, nil
}

// FillBandwidthBuffer writes every word of a streaming-read buffer: pages never written read as
// the one shared zero page, from cache, and would overstate the bandwidth.
func FillBandwidthBuffer(buf []uint64) {
	for i := range buf {
		buf[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
}

// BandwidthBytes is the size of the buffer MeasureReadBandwidth streams (bandwidthBytes): a caller
// that measures again and again (ReadBandwidth) allocates one of this size once.
func BandwidthBytes() int { return bandwidthBytes() }

// ReadBandwidth returns the streaming-read bandwidth in GB/s that p's workers reach on buf (which
// the caller has filled, FillBandwidthBuffer), the best of passes
// passes and of the read kernels (readBandwidthBest). buf should be at least BandwidthBytes long.
func ReadBandwidth(p *Pool, buf []uint64, passes int) float64 {
	return readBandwidthBest(p, New(p).f, buf, max(passes, 1))
}

// readBandwidthBest is readBandwidth with the better of f's streaming reads: the plain one, which
// leaves the prefetching to the hardware, and where there is one the read that prefetches into L2
// ahead as the VNNI mat-vecs do. Which is faster differs between CPUs; the roofline is the better.
func readBandwidthBest(p *Pool, f impl, buf []uint64, passes int) float64 {
	bw := readBandwidth(p, f.readSum, buf, passes)
	if f.readSumPF != nil {
		bw = max(bw, readBandwidth(p, f.readSumPF, buf, passes))
	}
	return bw
}

// readTask sums chunks of a buffer; the per-worker sums keep the reads from being optimized away.
type readTask struct {
	sum  func([]uint64) uint64
	buf  []uint64
	sink []uint64
}

// readChunk is one task item of the bandwidth reader: 1 MiB.
const readChunk = 1 << 17 // uint64 words

func (t *readTask) Do(w, lo, hi int) {
	for c := lo; c < hi; c++ {
		t.sink[w*8] += t.sum(t.buf[c*readChunk : (c+1)*readChunk])
	}
}

func readBandwidth(p *Pool, sum func([]uint64) uint64, buf []uint64, passes int) float64 {
	t := &readTask{sum: sum, buf: buf, sink: make([]uint64, 8*p.Workers())}
	best := 0.0
	for range passes { // the first pass also warms the TLB and the workers; the best one counts
		start := time.Now()
		p.RunTask(len(buf)/readChunk, t)
		gbs := float64(len(buf)/readChunk*readChunk*8) / time.Since(start).Seconds() / 1e9
		best = max(best, gbs)
	}
	return best
}

// readSumPortable returns the wrapping sum of x (four independent chains).
func readSumPortable(x []uint64) uint64 {
	var s0, s1, s2, s3 uint64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i]
		s1 += x[i+1]
		s2 += x[i+2]
		s3 += x[i+3]
	}
	for ; i < len(x); i++ {
		s0 += x[i]
	}
	return s0 + s1 + s2 + s3
}

// MeasurePeakFLOPs returns the compute peak of the quantized kernels on k in GFLOP/s (2 flops per
// multiply-add): the fused-dequantization mat-mat (QMatMat) on one problem for each way it computes,
// repeated for about d in all, best of three per problem, the better problem counting. This is the
// prefill roofline's compute side. The problems: a 4-bit [64, 2048] matrix (160 KB with scales and
// biases) against 32 token rows (256 KB), small enough for each core's L2 (the row-block kernel);
// an expert-sized [512, 2048] one against 64 rows (the row-block kernel's best case, with its
// 512-bit tile);
// and a [512, 2048] one against 512 rows, past qmmLargeX (token blocks); prefill runs all three.
// It allocates its inputs.
func MeasurePeakFLOPs(k *Kernels, d time.Duration) float64 {
	peakShapes := [...]struct{ out, in, t int }{{64, 2048, 32}, {512, 2048, 64}, {512, 2048, 512}}
	best := 0.0
	for _, sh := range peakShapes {
		best = max(best, peakFLOPs(k, sh.out, sh.in, sh.t, d/time.Duration(len(peakShapes))))
	}
	return best
}

func peakFLOPs(k *Kernels, out, in, t int, d time.Duration) float64 {
	m := &QMat{Bits: 4, Out: out, In: in}
	m.W = make([]byte, out*m.RowBytes())
	m.Scales = make([]uint16, out*m.Groups())
	m.Biases = make([]uint16, out*m.Groups())
	for i := range m.W {
		m.W[i] = byte(i * 131)
	}
	for i := range m.Scales {
		m.Scales[i], m.Biases[i] = safetensors.Float32ToBF16(0.01), safetensors.Float32ToBF16(-0.05)
	}
	x := make([]float32, t*in)
	for i := range x {
		x[i] = float32(i%17) * 0.1
	}
	y := make([]float32, t*out)
	flops := 2.0 * float64(t*out*in)
	best := 0.0
	for range 3 {
		n, start := 0, time.Now()
		for time.Since(start) < d/3 {
			k.QMatMat(y, m, x, t)
			n++
		}
		best = max(best, flops*float64(n)/time.Since(start).Seconds()/1e9)
	}
	return best
}

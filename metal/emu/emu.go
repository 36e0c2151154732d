// Package emu runs lily's Metal kernel sources on the CPU: the .metal files are compiled unchanged
// as C++ by the system g++ against an emulation of the MSL subset they use (include/), and run in a
// child process that executes each dispatch with real threadgroup, SIMD-group and barrier semantics
// (see include/metal_stdlib). It exists so that Linux CI can check every kernel against ref, and so a
// kernel can be debugged on any machine: Dispatch runs one dispatch on given buffers and returns them.
package emu

import (
	"bufio"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
)

//go:embed include
var include embed.FS

// Emulator is a running emulator process for one set of kernel sources. It is safe for concurrent
// use; dispatches are serialized.
type Emulator struct {
	dir     string
	kernels map[string]Kernel
	cached  bool // the binary came from the cache, not from g++

	mu     sync.Mutex
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	in     *bufio.Writer
	out    *bufio.Reader
	nextID uint32
}

// Options tune an emulator process.
type Options struct {
	// Threads is how many OS threads run threadgroups at once; 0 means one per CPU.
	Threads int
	// CacheDir is where compiled emulators are kept across processes, keyed by a hash of the
	// compiler, its flags and every source (cacheKey); "" means <user cache dir>/lily/metal-emu.
	// LILY_EMU_CACHE=off in the environment turns the cache off.
	CacheDir string
}

// cxxFlags are the g++ flags of every emulator build (optimized: real-size kernels run here).
var cxxFlags = []string{"-std=gnu++17", "-O2", "-pthread", "-w"}

// Build compiles sources (file name → MSL text) with g++ into a fresh temporary directory and starts
// the emulator process with default options. Close removes both.
func Build(sources map[string]string) (*Emulator, error) { return BuildOptions(sources, Options{}) }

// BuildOptions is Build with options.
func BuildOptions(sources map[string]string, o Options) (*Emulator, error) {
	cxx, err := exec.LookPath("g++")
	if err != nil {
		return nil, errors.New("metal emulator: g++ not found (install it: apt-get install -y g++)")
	}
	dir, err := os.MkdirTemp("", "lily-metal-emu-")
	if err != nil {
		return nil, fmt.Errorf("metal emulator: %w", err)
	}
	e := &Emulator{dir: dir, kernels: map[string]Kernel{}}
	if err := e.write(sources); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	bin, err := e.compile(cxx, o)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	threads := o.Threads
	if threads <= 0 {
		threads = runtime.NumCPU()
	}
	if err := e.start(bin, threads); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return e, nil
}

// write lays out the headers, the kernel sources and the generated main.cpp in e.dir.
func (e *Emulator) write(sources map[string]string) error {
	err := fsCopy(include, "include", filepath.Join(e.dir, "include"))
	if err != nil {
		return fmt.Errorf("metal emulator: %w", err)
	}
	names := make([]string, 0, len(sources))
	for n := range sources {
		names = append(names, n)
	}
	sort.Strings(names)
	var main strings.Builder
	main.WriteString("#include <metal_stdlib>\n")
	var table strings.Builder
	for _, n := range names {
		ks, err := ParseKernels(sources[n])
		if err != nil {
			return fmt.Errorf("metal emulator: %s: %w", n, err)
		}
		strict, err := rewrite(sources[n])
		if err != nil {
			return fmt.Errorf("metal emulator: %s: %w", n, err)
		}
		if err := os.WriteFile(filepath.Join(e.dir, n), []byte(strict), 0o644); err != nil {
			return fmt.Errorf("metal emulator: %w", err)
		}
		fmt.Fprintf(&main, "#include %q\n", n) // relative to main.cpp: the text (and cache key) is the same in every build
		for _, k := range ks {
			if _, dup := e.kernels[k.Name]; dup {
				return fmt.Errorf("metal emulator: kernel %s defined twice", k.Name)
			}
			e.kernels[k.Name] = k
			main.WriteString(k.wrapper())
			fmt.Fprintf(&table, "  {%q, lily_w_%s},\n", k.Name, k.Name)
		}
	}
	main.WriteString("#include <lily_emu_main.h>\nstatic const lily_emu::Entry kTable[] = {\n")
	main.WriteString(table.String())
	main.WriteString("  {\"\", nullptr}};\nint main() { return lily_emu::serve(kTable, sizeof kTable / sizeof kTable[0] - 1); }\n")
	return os.WriteFile(filepath.Join(e.dir, "main.cpp"), []byte(main.String()), 0o644)
}

func fsCopy(fsys embed.FS, from, to string) error {
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	ents, err := fsys.ReadDir(from)
	if err != nil {
		return err
	}
	for _, en := range ents {
		b, err := fsys.ReadFile(from + "/" + en.Name())
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(to, en.Name()), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func (e *Emulator) start(bin string, threads int) error {
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), fmt.Sprintf("LILY_EMU_THREADS=%d", threads))
	cmd.Stderr = os.Stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	r, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("metal emulator: start: %w", err)
	}
	e.cmd, e.stdin, e.in, e.out = cmd, w, bufio.NewWriterSize(w, 1<<20), bufio.NewReaderSize(r, 1<<20)
	return nil
}

// Kernels lists the kernels the sources define, with their parsed signatures.
func (e *Emulator) Kernels() map[string]Kernel { return e.kernels }

// Close stops the process and removes the build directory.
func (e *Emulator) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cmd != nil {
		e.in.Flush()
		e.stdin.Close()
		e.cmd.Wait()
		e.cmd = nil
	}
	return os.RemoveAll(e.dir)
}

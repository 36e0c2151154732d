package emu

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// FromCache reports whether the emulator's binary came from the compile cache (no g++ run).
func (e *Emulator) FromCache() bool { return e.cached }

// compile builds the emulator binary for the sources written to e.dir and returns its path: from
// the cache when an identical build is there, else with g++, storing the result in the cache.
func (e *Emulator) compile(cxx string, o Options) (string, error) {
	cacheDir, err := cacheDirOf(o)
	if err != nil {
		return "", err
	}
	var cached string
	if cacheDir != "" {
		key, err := e.cacheKey(cxx)
		if err != nil {
			return "", err
		}
		cached = filepath.Join(cacheDir, key)
		if st, err := os.Stat(cached); err == nil && st.Mode().IsRegular() && st.Mode()&0o100 != 0 {
			e.cached = true
			return cached, nil
		}
	}
	bin := filepath.Join(e.dir, "emu")
	args := append(append([]string(nil), cxxFlags...), "-I", filepath.Join(e.dir, "include"), "-o", bin, filepath.Join(e.dir, "main.cpp"))
	if out, err := exec.Command(cxx, args...).CombinedOutput(); err != nil {
		return "", fmt.Errorf("metal emulator: compiling the kernels failed: %v\n%s", err, out)
	}
	if cached != "" {
		// A cache that cannot be written only costs the next process a compile.
		_ = storeAtomically(bin, cached)
	}
	return bin, nil
}

// cacheDirOf is where o keeps compiled emulators, or "" when the cache is off.
func cacheDirOf(o Options) (string, error) {
	if strings.EqualFold(os.Getenv("LILY_EMU_CACHE"), "off") {
		return "", nil
	}
	if o.CacheDir != "" {
		return o.CacheDir, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", nil // no home or XDG cache: build every time
	}
	return filepath.Join(base, "lily", "metal-emu"), nil
}

// cacheKey hashes what decides the binary: the compiler (path and --version), the flags, and every
// file of the build directory (headers, kernel sources, the generated main.cpp).
func (e *Emulator) cacheKey(cxx string) (string, error) {
	h := sha256.New()
	ver, err := exec.Command(cxx, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("metal emulator: %s --version: %w", cxx, err)
	}
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", cxx, ver, strings.Join(cxxFlags, " "))
	var files []string
	err = filepath.WalkDir(e.dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("metal emulator: %w", err)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", fmt.Errorf("metal emulator: %w", err)
		}
		rel, _ := filepath.Rel(e.dir, f)
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)[:16]), nil
}

// storeAtomically copies src to dst through a temporary file in dst's directory and a rename, so a
// concurrent process sees either no entry or a whole executable.
func storeAtomically(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".emu-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, in); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o755); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), dst)
}

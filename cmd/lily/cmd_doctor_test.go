package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// TestDoctorHelpNamesEveryFail: the help says what to run on a Mac, how to rerun under Metal's
// validation layers, and what each check's FAIL means.
func TestDoctorHelpNamesEveryFail(t *testing.T) {
	var out, errb bytes.Buffer
	if code := realMain([]string{"doctor", "--help"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, s := range []string{"lily doctor --device metal --model", "MTL_DEBUG_LAYER=1 MTL_SHADER_VALIDATION=1",
		"device ", "limits ", "abi_probe ", "kernel/NAME ", "pipelines ", "shards ", "memory ", "generation ", "iogpu.wired_limit_mb", "--json"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("help lacks %q", s)
		}
	}
}

// TestDoctorUsage: bad flags are usage errors (exit 2).
func TestDoctorUsage(t *testing.T) {
	for _, args := range [][]string{{"--device", "cuda"}, {"--tokens", "0"}, {"--ctx-size", "-1"}, {"extra"}} {
		var out, errb bytes.Buffer
		if code := realMain(append([]string{"doctor"}, args...), &out, &errb); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}

// TestDoctorNoMetalFails: off a Mac, --device metal cannot open a device, which is a FAIL (exit 1)
// that says why, not a silent pass.
func TestDoctorNoMetalFails(t *testing.T) {
	if runtime.GOOS == "darwin" {
		t.Skip("this machine may have a Metal GPU; TestDoctorEmulator covers the checks")
	}
	var out, errb bytes.Buffer
	code := realMain([]string{"doctor", "--device", "metal", "--json"}, &out, &errb)
	var r doctorReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("exit %d, output %q: %v", code, out.String(), err)
	}
	if code != 1 || r.OK || len(r.Checks) == 0 || r.Checks[0].Status != "FAIL" || !strings.Contains(r.Checks[0].Detail, "no Metal GPU") {
		t.Fatalf("exit %d, report %+v", code, r)
	}
}

// TestDoctorEmulator runs every check on the kernel emulator with a fixture checkpoint: all PASS
// or SKIP (each SKIP with a reason), the generation agrees with ref, exit 0.
func TestDoctorEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the kernels with g++ and runs a generation on the emulator; skipped in -short")
	}
	if _, err := exec.LookPath("g++"); err != nil {
		t.Skip("the Metal kernel emulator needs g++, which is not installed")
	}
	var out, errb bytes.Buffer
	code := realMain([]string{"doctor", "--device", "metal-emu", "--model", benchFixture, "--tokens", "6", "--ctx-size", "256", "--json"}, &out, &errb)
	var r doctorReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("exit %d, output %q, stderr %q: %v", code, out.String(), errb.String(), err)
	}
	seen := map[string]string{}
	for _, c := range r.Checks {
		seen[c.Name] = c.Status
		if c.Status != "PASS" && c.Status != "SKIP" || c.Detail == "" {
			t.Errorf("%s: %s %q", c.Name, c.Status, c.Detail)
		}
	}
	for _, name := range []string{"device", "limits", "abi_probe", "pipelines", "shards", "memory", "weights", "generation"} {
		if seen[name] != "PASS" {
			t.Errorf("check %s: %q, want PASS", name, seen[name])
		}
	}
	for _, k := range []string{"qmv_4", "router_8", "attn_decode", "deltanet", "moe_prefill"} {
		if seen["kernel/"+k] != "PASS" {
			t.Errorf("check kernel/%s: %q, want PASS", k, seen["kernel/"+k])
		}
	}
	if code != 0 || !r.OK {
		t.Fatalf("exit %d, ok %v", code, r.OK)
	}
}

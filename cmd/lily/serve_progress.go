package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// serveProgress draws a one-line load progress bar on a terminal and stays silent otherwise (logs
// and pipes get no carriage-return noise). One goroutine uses it.
type serveProgress struct {
	w       io.Writer
	on      bool
	last    int // last percentage drawn, -1 before the first
	drawn   bool
	barSize int
}

func newServeProgress(w io.Writer) *serveProgress {
	return &serveProgress{w: w, on: serveIsTerminal(w), last: -1, barSize: 30}
}

// serveIsTerminal reports whether w is a character device (a terminal), by its file mode.
func serveIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// update draws done/total, redrawing only when the percentage changes.
func (p *serveProgress) update(done, total int64) {
	if !p.on || total <= 0 {
		return
	}
	pct := int(min(100, done*100/total))
	if pct == p.last {
		return
	}
	p.last, p.drawn = pct, true
	fill := pct * p.barSize / 100
	fmt.Fprintf(p.w, "\rloading [%s%s] %3d%%", strings.Repeat("#", fill), strings.Repeat(" ", p.barSize-fill), pct)
}

// done ends the bar's line.
func (p *serveProgress) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}

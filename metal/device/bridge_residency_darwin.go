//go:build darwin

package device

import (
	"unsafe"

	"github.com/ebitengine/purego/objc"
)

// residency keeps the weight buffers resident where the OS has residency sets (macOS 15+), so that
// pages the OS drops after idle do not turn the next request into reads from the SSD: one
// MTLResidencySet attached to the command queue, holding every wrapped buffer.
type residency struct {
	set objc.ID // 0 where the OS has no residency sets
	sel struct {
		newResidencySet, addAllocation, removeAllocation, commit objc.SEL
		requestResidency, endResidency, addResidencySet          objc.SEL
		removeResidencySet, setInitialCapacity                   objc.SEL
	}
}

// openResidency makes the residency set and attaches it to the queue, where the device can.
func (d *MetalDevice) openResidency() {
	r := &d.res
	r.sel.newResidencySet = objc.RegisterName("newResidencySetWithDescriptor:error:")
	r.sel.addAllocation = objc.RegisterName("addAllocation:")
	r.sel.removeAllocation = objc.RegisterName("removeAllocation:")
	r.sel.commit = objc.RegisterName("commit")
	r.sel.requestResidency = objc.RegisterName("requestResidency")
	r.sel.endResidency = objc.RegisterName("endResidency")
	r.sel.addResidencySet = objc.RegisterName("addResidencySet:")
	r.sel.removeResidencySet = objc.RegisterName("removeResidencySet:")
	r.sel.setInitialCapacity = objc.RegisterName("setInitialCapacity:")
	cls := objc.GetClass("MTLResidencySetDescriptor")
	if cls == 0 || !objc.Send[bool](d.dev, d.sel.respondsToSelector, r.sel.newResidencySet) {
		d.limits.Residency = "none (residency sets need macOS 15)"
		return
	}
	desc := objc.ID(cls).Send(d.sel.new)
	desc.Send(r.sel.setInitialCapacity, uint64(64))
	var nserr objc.ID
	r.set = d.dev.Send(r.sel.newResidencySet, desc, unsafe.Pointer(&nserr))
	desc.Send(d.sel.release)
	if r.set == 0 {
		d.limits.Residency = "none (newResidencySetWithDescriptor failed: " + d.errText(nserr) + ")"
		return
	}
	d.queue.Send(r.sel.addResidencySet, r.set)
	d.limits.Residency = "MTLResidencySet"
}

// makeResident adds a buffer to the residency set and asks for residency now.
func (d *MetalDevice) makeResident(id objc.ID) {
	if r := &d.res; r.set != 0 {
		r.set.Send(r.sel.addAllocation, id)
		r.set.Send(r.sel.commit)
		r.set.Send(r.sel.requestResidency)
	}
}

// dropResident removes a buffer from the residency set before it is released.
func (d *MetalDevice) dropResident(id objc.ID) {
	if r := &d.res; r.set != 0 {
		r.set.Send(r.sel.removeAllocation, id)
		r.set.Send(r.sel.commit)
	}
}

// closeResidency detaches and releases the residency set.
func (d *MetalDevice) closeResidency() {
	if r := &d.res; r.set != 0 {
		d.queue.Send(r.sel.removeResidencySet, r.set)
		r.set.Send(r.sel.endResidency)
		r.set.Send(d.sel.release)
		r.set = 0
	}
}

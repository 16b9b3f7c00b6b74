"""Ref types implemented in Python (runtime.vm.objects.NativeObject): native headers whose last
release drops the Python object, including releases from inside another object's teardown."""

from __future__ import annotations

import gc

from jitvm.runtime.vm import nativelib, objects
from jitvm.runtime.vm.objects import NativeObject, Ref, header, payload, type_id


class Probe(NativeObject):
    type_name = "test.probe"
    destroyed: list = []

    def __init__(self, name: str, holds: Ref | None = None):
        self.name = name
        self.holds = holds  # a reference this object owns, released when it goes

    def on_destroy(self) -> None:
        Probe.destroyed.append(self.name)
        self.holds = None


class OtherProbe(Probe):
    type_name = "test.other_probe"


def test_new_objects_have_one_reference_and_their_types_id():
    ref = Probe.new("a")
    other = OtherProbe.new("b")
    assert ref.refcount == 1 and other.refcount == 1
    assert header(ref.addr).type_id == type_id("test.probe")
    assert header(other.addr).type_id == type_id("test.other_probe") != type_id("test.probe")
    assert isinstance(payload(ref.addr), Probe) and payload(ref.addr).name == "a"
    assert payload(ref.addr, OtherProbe) is None


def test_the_last_native_release_drops_the_python_object_once():
    Probe.destroyed.clear()
    ref = Probe.new("kept")
    addr = ref.addr
    nativelib.fn.jv_retain(addr)  # native code keeps a reference
    del ref
    gc.collect()
    assert Probe.destroyed == [] and payload(addr).name == "kept"
    nativelib.fn.jv_release(addr)  # ... and drops it: the last one
    assert Probe.destroyed == ["kept"]
    assert payload(addr) is None


def test_teardown_that_releases_another_object_runs_both():
    """A view holding its buffer: the view's teardown releases the buffer from inside the
    native release that is destroying the view."""
    Probe.destroyed.clear()
    inner = Probe.new("inner")
    outer = Probe.new("outer", holds=Ref(inner.addr))
    inner_addr = inner.addr
    del inner
    assert Probe.destroyed == [] and header(inner_addr).refcount == 1
    del outer
    gc.collect()
    assert Probe.destroyed == ["outer", "inner"]
    assert payload(inner_addr) is None


def test_churn_leaves_no_python_objects_behind():
    before = len(objects._live)
    for k in range(2000):
        Probe.new(f"p{k}", holds=Probe.new(f"q{k}"))
    gc.collect()
    assert len(objects._live) == before

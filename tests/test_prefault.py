"""Environments forked ahead copy the template's pages a cold start writes, before their function comes."""
from __future__ import annotations

import ctypes
import os
import resource
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox.runtime.environment import prefault

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pagemap and madvise are Linux's")

#: What a cold start does first, in miniature: writes over memory the fork shares with its parent.
SHARED = [bytearray(prefault.PAGE * 400) for _ in range(2)]


def _address(block: bytearray) -> int:
    return ctypes.addressof((ctypes.c_char * len(block)).from_buffer(block))


def _first_steps() -> None:
    for block in SHARED:
        for at in range(0, len(block), prefault.PAGE):
            block[at] = (block[at] + 1) % 256


def _faults_in_child(ranges: prefault.Ranges) -> tuple[int, int, bool]:
    """In a fork: the pages copy_ahead asked for, the faults the first steps then took, and whether it kept
    every byte."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            before = [bytes(b) for b in SHARED]
            asked = prefault.copy_ahead(ranges)
            kept = [bytes(b) for b in SHARED] == before
            start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            _first_steps()
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start
            os.write(write_end, f"{asked} {faults} {int(kept)}".encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end) as f:
        asked, faults, kept = f.read().split()
    os.waitpid(pid, 0)
    return int(asked), int(faults), kept == "1"


@linux
def test_the_scout_finds_the_pages_the_first_steps_write_and_a_fork_that_copies_them_ahead_faults_no_more():
    for block in SHARED:  # every page present in the parent, so a fork shares it
        block[:] = bytes(len(block))
    ranges = prefault.learn(_first_steps)
    pages = {start + i for start, end in ranges for i in range(0, end - start, prefault.PAGE)}
    page = prefault.PAGE
    written = {(_address(b) + at) // page * page for b in SHARED for at in range(0, len(b), page)}
    assert len(pages & written) >= 0.9 * len(written)  # the scout saw (nearly) every page it wrote

    _, cold_faults, _ = _faults_in_child([])
    asked, warm_faults, kept = _faults_in_child(ranges)
    assert cold_faults >= 800  # without: each page the steps write is copied at its first write
    assert asked >= 800 and kept  # copied ahead, and not a byte changed
    assert warm_faults < cold_faults / 10


def _disjoint(draw_list: list[int]) -> prefault.Ranges:
    edges = sorted(set(draw_list))
    return [(edges[i], edges[i + 1]) for i in range(0, len(edges) - 1, 2)]


@given(st.lists(st.integers(0, 500), max_size=30), st.lists(st.integers(0, 500), max_size=30))
def test_only_what_is_still_mapped_is_asked_for(wanted: list[int], mapped: list[int]):
    ranges, maps = _disjoint(wanted), _disjoint(mapped)
    inside = prefault._within(ranges, maps)
    expected = {x for lo, hi in ranges for x in range(lo, hi) if any(a <= x < b for a, b in maps)}
    assert {x for lo, hi in inside for x in range(lo, hi)} == expected
    assert all(lo < hi for lo, hi in inside)


def test_neighbouring_pages_make_one_range():
    page = prefault.PAGE
    assert prefault._ranges([0, page, 2 * page, 5 * page]) == [(0, 3 * page), (5 * page, 6 * page)]


@linux
def test_copying_ahead_stops_when_the_function_comes():
    """A spare taken while it still copies stops at the next look: the copying never holds up a cold start."""
    block = bytearray(prefault.PAGE * (3 * prefault.CHUNK_PAGES))
    start = _address(block) // prefault.PAGE * prefault.PAGE + prefault.PAGE
    ranges = [(start + i * prefault.PAGE, start + (i + 1) * prefault.PAGE) for i in range(2 * prefault.CHUNK_PAGES)]
    assert prefault.copy_ahead(ranges) == 2 * prefault.CHUNK_PAGES
    assert prefault.copy_ahead(ranges, wanted=lambda: True) == prefault.CHUNK_PAGES

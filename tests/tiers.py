"""Which tests `make test` leaves to `make test-deep`: the long tail of the sandbox's own suite.

`make test` is a newcomer's check and must stay within five minutes of a fresh clone on 2 cores (issue 33). The
tests that cost the most go to the deep tier instead of being deleted, and CI runs both (`.ci/run`). What is deep is
a measured list, tests/deep.txt, not a judgement made test by test: one line per test function, optionally with
``sample 1/N``, which keeps every N-th of a parametrized family in `make test` (the first included) and leaves the
rest to `make test-deep`, as a campaign keeps a representative slice in the tests.

Every test module keeps at least one test in `make test` (tests/test_tiers.py checks it), so no part of the sandbox
goes unchecked by a newcomer's run. To rebalance after the suite grows, measure it and write the list again:

    .venv/bin/python -m pytest -n auto -m "not slow and not notebook and not course and not grading" \\
        -p no:randomly --durations=0 -q > durations.txt
    .venv/bin/python tests/tiers.py durations.txt
"""
from __future__ import annotations

import ast
import math
import re
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

LIST = Path(__file__).with_name("deep.txt")
#: A test whose call takes this long (seconds, measured on 2 cores with both busy) goes to the deep tier.
SINGLE_LIMIT = 1.0
#: A parametrized family keeps about this many of its cases in `make test`.
FAMILY_KEEPS = 6

#: Tests that stay in `make test` whatever they cost: the house rules a contributor's change is the likeliest to
#: break (a function grown past fifty lines, an import up the floors or in a circle, a word spelt outside the
#: vocabulary). Left to the deep tier, a fresh clone's `make test` passed what CI's `test-rest` then failed.
ALWAYS_QUICK = frozenset({
    "tests/test_house.py::test_no_function_is_longer_than_fifty_lines",
    "tests/test_house.py::test_every_import_runs_down_the_floors",
    "tests/test_house.py::test_no_import_cycles_in_the_package",
    "tests/test_house.py::test_only_the_vocabulary_module_spells_its_words",
})

_LINE = re.compile(r"^(?P<test>\S+?)(?:\s+sample\s+1/(?P<step>\d+))?\s*$")


@dataclass(frozen=True)
class Entry:
    """One line of tests/deep.txt: a test function (``file::name`` or ``file::Class::name``), all of it deep
    (``step`` 0), or all but every ``step``-th of its parametrized cases."""

    test: str
    step: int = 0

    def line(self) -> str:
        return self.test + (f"  sample 1/{self.step}" if self.step else "")


def read_list(path: Path = LIST) -> dict[str, Entry]:
    """The deep list, by test function. A line that does not parse is an error, not a test left in the quick run."""
    entries: dict[str, Entry] = {}
    for number, raw in enumerate(path.read_text().splitlines(), 1):
        text = raw.split("#", 1)[0].strip()
        if not text:
            continue
        match = _LINE.match(text)
        if match is None or "::" not in match["test"]:
            raise ValueError(f"{path.name} line {number}: expected 'tests/file.py::test_name [sample 1/N]': {raw!r}")
        entry = Entry(match["test"], int(match["step"] or 0))
        if entry.step == 1:
            raise ValueError(f"{path.name} line {number}: 'sample 1/1' keeps every case: leave the line out")
        entries[entry.test] = entry
    return entries


def function_id(nodeid: str) -> str:
    """``tests/test_x.py::test_f[case]`` -> ``tests/test_x.py::test_f``."""
    return nodeid.split("[", 1)[0]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini("deep_list", "the list of deep tests (tests/tiers.py), relative to the rootdir",
                  default=str(LIST.relative_to(LIST.parent.parent)))


@pytest.hookimpl(tryfirst=True)  # before pytest's own -m selection reads the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    entries = read_list(config.rootpath / config.getini("deep_list"))
    # A family's cases are counted in the order of their ids, not of collection, so a shuffled run (pytest-randomly)
    # keeps the same cases in the quick tier.
    families: dict[str, list[str]] = defaultdict(list)
    for item in items:
        if function_id(item.nodeid) in entries:
            families[function_id(item.nodeid)].append(item.nodeid)
    position = {nodeid: i for ids in families.values() for i, nodeid in enumerate(sorted(ids))}
    for item in items:
        entry = entries.get(function_id(item.nodeid))
        if entry is not None and (entry.step == 0 or position[item.nodeid] % entry.step):
            item.add_marker(pytest.mark.deep)


def _durations(text: str) -> dict[str, list[float]]:
    """Each test function's call durations, in the order pytest listed them, from ``--durations=0`` output."""
    calls: dict[str, list[float]] = defaultdict(list)
    for line in text.splitlines():
        match = re.match(r"^([\d.]+)s call\s+(\S+)$", line.strip())
        if match:
            calls[function_id(match[2])].append(float(match[1]))
    return calls


def defined_tests(path: Path) -> set[str]:
    """``tests/file.py::name`` (or ``::Class::name``) for each test function a test module defines."""
    found = set()
    prefix = f"tests/{path.name}"
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            found.add(f"{prefix}::{node.name}")
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            found.update(f"{prefix}::{node.name}::{f.name}" for f in node.body
                         if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name.startswith("test"))
    return found


def modules() -> dict[str, set[str]]:
    """Each test module's test functions, by its path from the repository's root."""
    return {f"tests/{path.name}": defined_tests(path) for path in sorted(LIST.parent.glob("test_*.py"))}


def plan(calls: dict[str, list[float]], known: dict[str, set[str]] | None = None) -> list[Entry]:
    """The deep list for measured durations: a family of more than FAMILY_KEEPS cases is sampled when its cases
    cost over SINGLE_LIMIT together; a single test goes when it alone does. A module whose every test would go
    keeps its quickest measured one (``known`` gives each module's tests; by default those measured)."""
    entries = []
    for test, spent in sorted(calls.items()):
        if test in ALWAYS_QUICK:
            continue
        if len(spent) > FAMILY_KEEPS and sum(spent) > SINGLE_LIMIT:
            entries.append(Entry(test, math.ceil(len(spent) / FAMILY_KEEPS)))
        elif len(spent) <= FAMILY_KEEPS and max(spent) >= SINGLE_LIMIT:
            entries.append(Entry(test))
    whole = {e.test for e in entries if not e.step}
    if known is None:
        known = defaultdict(set)
        for test in calls:
            known[test.split("::", 1)[0]].add(test)
    for tests in known.values():
        if tests and tests <= whole:
            keep = min(tests & calls.keys(), key=lambda t: sum(calls[t]))
            entries = [e for e in entries if e.test != keep]
    return entries


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    calls = _durations(Path(argv[0]).read_text())
    if not calls:
        print(f"{argv[0]}: no '--durations=0' lines found", file=sys.stderr)
        return 2
    entries = plan(calls, modules())
    header = (f"# Tests `make test` leaves to `make test-deep` (tests/tiers.py): over {SINGLE_LIMIT} s a call, or a\n"
              f"# family sampled to about {FAMILY_KEEPS} cases. Written by tests/tiers.py from measured durations.\n")
    LIST.write_text(header + "".join(e.line() + "\n" for e in entries))
    print(f"{len(entries)} lines written to {LIST}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

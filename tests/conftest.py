import contextlib
import sys
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")
# jsonschema, under nbformat, checks the "iri" format with rfc3987-syntax when it is installed (jupyter-events pulls
# it in), and that package builds an Earley parser as it is imported: over 2 s of CPU in each pytest worker that
# imports nbformat. No notebook schema has a "format" at all; without the package, jsonschema leaves "iri" unchecked.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[assignment]

# tests/deep.txt marks the tests make test leaves to make test-deep (tests/tiers.py says how they are chosen).
pytest_plugins = ["tiers"]

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def example(name: str, func: str = "handler") -> str:
    """A handler spec for one of the example handlers."""
    return f"{EXAMPLES / name}:{func}"


@contextlib.contextmanager
def no_real_sleep():
    """Record every wall-clock sleep the sandbox makes meanwhile (a virtual world should make none)."""
    import sandbox.aws.adapter as adapter

    slept: list[float] = []
    original = adapter.real_sleep

    def record(seconds):
        slept.append(seconds)
        original(seconds)

    adapter.real_sleep = record
    try:
        yield slept
    finally:
        adapter.real_sleep = original


def pytest_addoption(parser):
    parser.addoption("--golden-all", action="store_true",
                     help="compare every golden seed (tests/test_golden.py), not only seeds 0 and 1")


@pytest.hookimpl(trylast=True)  # after syrupy has seen every item: a deselected one's snapshot is kept, not unused
def pytest_collection_modifyitems(config, items):
    """Leave out the tests marked golden_all (seeds 2-9 of every scenario) unless --golden-all asks for them or
    --snapshot-update rewrites the snapshots (which must take every seed)."""
    if config.getoption("--golden-all") or config.getoption("--snapshot-update", default=False):
        return
    left_out = [item for item in items if item.get_closest_marker("golden_all")]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if not item.get_closest_marker("golden_all")]


def pytest_terminal_summary(terminalreporter):
    """Name every browser UI test's outcome at the end of the run, so a skipped one cannot pass unseen."""
    from ui_support import report_ui_tests

    report_ui_tests(terminalreporter)


@contextlib.contextmanager
def open_run(scenario, handler, seed=0, **overrides):
    """Run a scenario like run_scenario, but keep the world open to look into moto afterwards."""
    from sandbox import Sandbox, get_scenario

    sc = get_scenario(scenario)
    cfg = sc.resolve(overrides)
    with Sandbox(seed=seed, meta={"scenario": sc.name, "settings": cfg.values()}) as sb:
        sb.services.timings.email = cfg.run.email_seconds
        sb.services.timings.charge = cfg.run.charge_seconds
        fn = sb.function(handler, timeout=cfg.run.function_timeout)
        queue, mapping, producer = sc.deliver(sb, fn, cfg)
        yield sb, queue, mapping, producer


@pytest.fixture
def thread_isolation(monkeypatch):
    """Handler files run in the world's own process ("thread" isolation), for tests of the interleaving
    search itself: hundreds of schedules each, where forking environments for every one would cost
    minutes and test nothing more of the search (tests/test_environment.py holds the environments)."""
    monkeypatch.setenv("RWH_ISOLATION", "thread")

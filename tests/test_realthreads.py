"""Real-threads mode: the same scenarios on free OS threads and the wall clock, over HTTP to moto's server.

The verdicts must agree with the deterministic world's on every scenario the mode runs, for a
handler that breaks (naive) and one that holds (idempotent), so the lessons' verdicts are not an
artefact of the simulator. Settings are the short ones (``SHORT_SETTINGS``): a run takes seconds.
"""
from __future__ import annotations

import json

import pytest

from sandbox import BadInput
from sandbox.aws.http_gateway import Forwarder
from sandbox.cli import main
from sandbox.core import active
from sandbox.modes.realthreads import (
    RUNNABLE_SCENARIOS,
    MotoServer,
    RealThreadsSandbox,
    compare_modes,
    run_real_threads,
    short_settings,
)
from sandbox.scenarios.base import run_in_world
from sandbox.vocab import Outcome, RecordType
from tests.conftest import example

NAIVE, IDEMPOTENT = example("naive_email.py"), example("idempotent.py")
#: The quick ones (under a second each); crash-mid-work and timeout-after-effect wait out a 2 s lock.
QUICK = ("no-fault", "concurrent-claims", "async-duplicate", "async-retry", "sqs-batch-failure")
SLOW = tuple(s for s in RUNNABLE_SCENARIOS if s not in QUICK)


def _disagreements(rows: list[dict]) -> list[dict]:
    return [r for r in rows if not r["agree"] or r["effects_deterministic"] != r["effects_real-threads"]]


def test_verdicts_agree_with_the_deterministic_world_on_five_scenarios():
    naive, idempotent = compare_modes(NAIVE, QUICK), compare_modes(IDEMPOTENT, QUICK)
    assert len(QUICK) >= 5
    assert _disagreements(naive + idempotent) == []
    # Not all alike: the naive handler breaks wherever a duplicate comes, the idempotent one never does.
    assert {r["scenario"] for r in naive if r["real-threads"] == "invalid"} == set(QUICK) - {"no-fault"}
    assert {r["real-threads"] for r in idempotent} == {"valid"}


@pytest.mark.slow
def test_verdicts_agree_where_a_lock_must_run_out_on_the_wall_clock():
    rows = compare_modes(NAIVE, SLOW) + compare_modes(IDEMPOTENT, SLOW)
    assert _disagreements(rows) == []
    assert [r["real-threads"] for r in rows] == ["invalid"] * len(SLOW) + ["valid"] * len(SLOW)


class CountingForwarder(Forwarder):
    """A forwarder that counts what it sends (the requests really go out over HTTP)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.sent: list[tuple[str, str]] = []

    def send(self, service, op, request, params):
        self.sent.append((service, op))
        return super().send(service, op, request, params)


def test_invocations_run_at_once_on_os_threads_against_the_http_server():
    sc, cfg = short_settings("concurrent-claims", {"copies": 6})
    forwarder = CountingForwarder(MotoServer.shared().url)
    assert forwarder.endpoint.hostname == "127.0.0.1"
    world = RealThreadsSandbox(0, forwarder=forwarder, meta={"scenario": sc.name, "settings": cfg.values()})
    result = run_in_world(world, sc, IDEMPOTENT, cfg)
    assert result.valid and result.verdict.effects_per_key == {"o-1": {"email": 1}}  # atomic claims: one winner
    invocations = result.history.invocations()
    assert len(invocations) == 6
    # Free threads: the copies ran side by side on the wall clock (at least two at one moment; a loaded
    # machine may finish one copy before the OS starts the third, so more would make the test flaky).
    edges = sorted([(v["t"], 1) for v in invocations.values()] + [(v["end"], -1) for v in invocations.values()])
    running = [sum(step for _, step in edges[:i + 1]) for i in range(len(edges))]
    assert max(running) >= 2
    # One invocation per container at a time, as on Lambda: copies that overlapped had containers of their
    # own (a copy that started after another ended may reuse its container, whatever the machine's speed).
    spans = list(invocations.values())
    for i, a in enumerate(spans):
        for b in spans[i + 1:]:
            if a["t"] < b["end"] and b["t"] < a["end"]:
                assert a["container"] != b["container"], (a, b)
    assert len({v["container"] for v in spans}) >= max(running)
    recorded = [(e["service"], e["op"]) for e in result.history.of_type(RecordType.AWS)]
    assert recorded and set(recorded) <= set(forwarder.sent)
    assert ("dynamodb", "CreateTable") in forwarder.sent  # the table is made through the API too
    assert result.history.meta["mode"] == "real-threads"


def test_the_timeout_stops_an_invocation_on_the_wall_clock():
    result = run_real_threads("timeout-after-effect", NAIVE)
    timeout = result.settings["function_timeout"]
    first = result.history.invocations()["inv-1"]
    assert first["outcome"] == Outcome.TIMEOUT
    assert timeout <= first["end"] - first["t"] < timeout + 0.5
    assert result.wall_seconds >= timeout


def test_a_wall_clock_run_is_drawn_on_a_wall_clock_axis():
    import matplotlib.pyplot as plt

    from sandbox import plot_timeline

    result = run_real_threads("no-fault", NAIVE)
    fig = plot_timeline(result.history)
    try:
        assert fig.axes[0].get_xlabel() == "wall-clock time (s)"  # its seconds are real ones, not virtual
    finally:
        plt.close(fig)


def test_a_scenario_the_mode_cannot_run_is_bad_input():
    with pytest.raises(BadInput, match="real-threads mode cannot run sqs-fifo-window.*runs no-fault"):
        run_real_threads("sqs-fifo-window", IDEMPOTENT)


def test_settings_too_long_for_the_wall_clock_are_bad_input_and_leave_no_world_open():
    with pytest.raises(BadInput, match="more than 1 s of wall-clock time.*short settings"):
        run_real_threads("async-retry", NAIVE, settings={"first_retry_delay": 30}, budget=1.0)
    assert active.current() is None
    assert run_real_threads("no-fault", NAIVE).valid  # and the next run works


def test_cli_real_threads(capsys):
    assert main(["run", "concurrent-claims", "--handler", NAIVE, "--real-threads", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "invalid" and report["effects_per_key"]["o-1"]["email"] == 3
    assert report["settings"]["email_seconds"] == 0.05  # the short settings
    assert main(["run", "no-fault", "--handler", NAIVE, "--real-threads", "--policy", "round-robin"]) == 2
    assert "free threads" in capsys.readouterr().err


def test_a_handler_file_runs_in_execution_environments_of_its_own(tmp_path):
    """The same environments as the deterministic world's: an OS process each, the task root as the working
    directory, a /tmp of its own; their requests reach moto's server through the world's channel."""
    import os

    (tmp_path / "where.py").write_text(
        "import os\n"
        "def handler(event, context):\n"
        "    print('pid', os.getpid(), 'cwd', os.getcwd())\n"
        "    open('/tmp/mine', 'w').close()\n"
        "    return {'ok': True}\n")
    result = run_real_threads("concurrent-claims", f"{tmp_path}/where.py:handler")
    lines = [e["text"].split() for e in result.history.logs() if e["text"].startswith("pid")]
    assert len(lines) == 3
    pids = {int(words[1]) for words in lines}
    assert pids and os.getpid() not in pids
    assert {words[3] for words in lines} != {str(tmp_path)} and all(w[3].endswith(tmp_path.name) for w in lines)
    assert not (tmp_path / "mine").exists() and not os.path.exists("/tmp/mine")

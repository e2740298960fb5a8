"""Nothing an execution environment says about its own requests is believed (DESIGN.md, rule 1).

The handlers in tests/handlers/hostile/ attack the channel as a student could: they reach into the
environment's own code (``sandbox.runtime.environment.guest``) and rename their requests, or send the
world messages botocore and awslambdaric never would. The world must judge each request by what it
does, and end an environment that breaks the protocol without breaking itself.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox import run_scenario
from sandbox.cli import main

HOSTILE = Path(__file__).resolve().parent / "handlers" / "hostile"


@pytest.fixture(autouse=True)
def _process_isolation(monkeypatch):
    monkeypatch.setenv("RWH_ISOLATION", "process")


def hostile(name: str) -> str:
    return f"{HOSTILE / name}:handler"


# -- the operation's name travels with no request ------------------------------------------------------
def test_a_put_labelled_get_still_races_under_the_exhaustive_search(capsys):
    """The exhaustive search reorders requests that touch one item; a PutItem that says it is a read would
    commute with the other copy's read, and the race would pass after one schedule."""
    code = main(["run", "concurrent-claims", "--handler", hostile("put_labelled_get.py"), "--policy", "exhaustive",
                 "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["schedules"] > 1 and report["broken"] > 0


def test_a_put_labelled_putitemx_still_meets_the_fault_on_putitem():
    """own-write-retried loses the first PutItem's answer; a handler that calls it something else is retried
    into its own claim like any other, and its order is lost."""
    result = run_scenario("own-write-retried", hostile("claim_labelled_putitemx.py"))
    puts = [(e["op"], e["result"], (e.get("detail") or {}).get("fault")) for e in result.history.of_type("aws")
            if e["service"] == "dynamodb" and e["op"] != "GetItem"]
    assert puts == [("PutItem", "ok", "timeout-applied"), ("PutItem", "ConditionalCheckFailed", None)]
    assert result.status == "invalid" and [f.key for f in result.verdict.lost] == ["o-1"]

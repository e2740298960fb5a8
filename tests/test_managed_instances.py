"""Lambda Managed Instances: several requests at once in one execution environment, a process each.

AWS: each concurrent request "runs in a separate process with its own memory space and
initialization", and "The /tmp directory is shared across all concurrent requests in the execution
environment" (lambda-managed-instances-python-runtime.html).
"""
from __future__ import annotations

import json
import textwrap

import pytest

from sandbox import BadInput, Sandbox, run_scenario

from conftest import example

SCRATCH, IMPROVED, MODULE_SET = example("tmp_scratch.py"), example("idempotent.py"), example("module_set.py")

FACTS = """
    import json, os, time

    SEEN = []

    def handler(event, context):
        SEEN.append(context.aws_request_id)
        with open(f"/tmp/{context.aws_request_id}", "w") as f:
            f.write("x")
        time.sleep(0.5)  # busy, so the requests that arrive meanwhile need processes of their own
        files = sorted(n for n in os.listdir("/tmp") if os.path.isfile(os.path.join("/tmp", n)))  # not a bound folder
        process = [os.readlink("/proc/self/ns/pid"), os.getpid()]  # pids repeat across PID namespaces
        print(json.dumps({"pid": process, "seen": len(SEEN), "tmp": files, "me": context.aws_request_id}))
"""


@pytest.fixture(autouse=True)
def _process_isolation(monkeypatch):
    monkeypatch.setenv("RWH_ISOLATION", "process")


def test_processes_of_one_environment_share_tmp_and_keep_their_globals(tmp_path):
    handler = tmp_path / "facts.py"
    handler.write_text(textwrap.dedent(FACTS))
    result = run_scenario("managed-instances-concurrency", f"{handler}:handler",
                          settings={"copies": 3, "processes_per_environment": 4})
    facts = [json.loads(e["text"]) for e in result.history.logs() if e["text"].startswith("{")]
    env_of = {e["request_id"]: e.get("environment") for e in result.history.of_type("invoke_start")}
    assert sorted(env_of.values()) == ["e1"] * 4 + ["e2"] * 2  # six requests: four processes, then two
    assert len({tuple(f["pid"]) for f in facts}) == 6 and all(f["seen"] == 1 for f in facts)  # globals per process
    for f in facts:  # each process sees the files of its own environment's requests, and only those
        assert set(f["tmp"]) == {r for r, env in env_of.items() if env == env_of[f["me"]]}


@pytest.mark.parametrize("seed", range(2))
def test_a_fixed_scratch_name_in_tmp_carries_one_requests_order_into_anothers_work(seed):
    shared = run_scenario("managed-instances-concurrency", SCRATCH, seed=seed)
    assert shared.status == "invalid"
    assert sorted(f.kind for f in shared.verdict.findings) == ["duplicate", "lost"]
    assert run_scenario("managed-instances-concurrency", SCRATCH, seed=seed,
                        settings={"processes_per_environment": 1}).valid  # an environment per request
    assert run_scenario("managed-instances-concurrency", SCRATCH, seed=seed,
                        settings={"scratch_per_request": True}).valid
    assert run_scenario("managed-instances-concurrency", IMPROVED, seed=seed).valid
    again = run_scenario("managed-instances-concurrency", SCRATCH, seed=seed)
    assert again.history.to_json() == shared.history.to_json()


def test_module_state_dedupes_nothing_across_the_processes():
    result = run_scenario("managed-instances-concurrency", MODULE_SET)
    assert result.verdict.effects_per_key == {"o-1": {"email": 2}, "o-2": {"email": 2}}


def test_managed_instances_need_a_handler_file_and_a_sane_count(tmp_path):
    with Sandbox(seed=0, isolation="thread") as sb:
        with pytest.raises(BadInput, match="need the handler as a file"):
            sb.function(IMPROVED).use_managed_instances(4)
    with Sandbox(seed=0) as sb:
        with pytest.raises(BadInput, match="between 1 and 64"):
            sb.function(IMPROVED).use_managed_instances(0)

"""SnapStart: the init runs once, in a snapshot, and every execution environment is a restored copy of it.

AWS: "Lambda uses a single initialized snapshot to resume multiple execution environments", so what the
init made unique is shared (snapstart-uniqueness.html); the Python runtime runs the before-snapshot and
after-restore hooks registered with snapshot_restore_py (snapstart-runtime-hooks-python.html).
"""
from __future__ import annotations

import hashlib
import json
import os
import textwrap

import pytest

from sandbox import BadInput, Sandbox, run_scenario

from conftest import example

INIT_TOKEN, IMPROVED, NAIVE = example("init_token.py"), example("idempotent.py"), example("naive_email.py")

FACTS = """
    import json, os, time, uuid
    from snapshot_restore_py import register_after_restore, register_before_snapshot

    TOKEN = str(uuid.uuid4())
    with open("/tmp/made-at-init", "w") as f:
        f.write("init")
    HOOKS = []
    register_before_snapshot(lambda: HOOKS.append("before snapshot"))
    register_after_restore(lambda: HOOKS.append("after restore"))

    def handler(event, context):
        mine = f"/tmp/{context.aws_request_id}"
        open(mine, "w").close()
        time.sleep(0.5)  # busy a while, so the copies that arrive meanwhile need environments of their own
        # files only: a checkout under /tmp is bound back into a private /tmp as a folder
        others = sorted(n for n in os.listdir("/tmp") if os.path.isfile(os.path.join("/tmp", n))
                        and n not in ("made-at-init", os.path.basename(mine)))
        print(json.dumps({"token": TOKEN, "pid": os.getpid(), "hooks": HOOKS, "others": others,
                          "init_file": open("/tmp/made-at-init").read(),
                          "type": os.environ["AWS_LAMBDA_INITIALIZATION_TYPE"]}))
"""


def _facts(result):
    return [json.loads(e["text"]) for e in result.history.logs() if e["text"].startswith("{")]


@pytest.fixture(autouse=True)
def _process_isolation(monkeypatch):
    monkeypatch.setenv("RWH_ISOLATION", "process")


def test_restored_environments_share_what_init_made_and_keep_their_own_tmp(tmp_path):
    handler = tmp_path / "facts.py"
    handler.write_text(textwrap.dedent(FACTS))
    result = run_scenario("snapstart-cloned-init", f"{handler}:handler", settings={"copies": 3})
    facts = _facts(result)
    assert len(facts) == 3 and len({f["pid"] for f in facts}) == 3  # three environments, three processes
    assert len({f["token"] for f in facts}) == 1  # one init: one "unique" token in all of them
    assert all(f["hooks"] == ["before snapshot", "after restore"] for f in facts)
    assert all(f["init_file"] == "init" and f["type"] == "snap-start" for f in facts)
    assert all(f["others"] == [] for f in facts)  # a copy of the snapshot's /tmp each, nobody else's files
    starts = [e for e in result.history.of_type("invoke_start")]
    assert all(e.get("restored") is True and e.get("cold_start") is True for e in starts)


def test_without_snapstart_each_environment_runs_its_own_init(tmp_path):
    handler = tmp_path / "facts.py"
    handler.write_text(textwrap.dedent(FACTS))
    facts = _facts(run_scenario("snapstart-cloned-init", f"{handler}:handler", settings={"snapstart": False}))
    assert len({f["token"] for f in facts}) == 2 and all(f["hooks"] == [] for f in facts)
    assert all(f["type"] == "on-demand" for f in facts)


@pytest.mark.parametrize("seed", range(2))
def test_a_token_made_at_init_lets_the_other_environments_duplicate_through(seed):
    cloned = run_scenario("snapstart-cloned-init", INIT_TOKEN, seed=seed)
    assert cloned.status == "invalid" and cloned.verdict.effects_per_key == {"o-1": {"email": 2}}
    assert run_scenario("snapstart-cloned-init", INIT_TOKEN, seed=seed, settings={"snapstart": False}).valid
    assert run_scenario("snapstart-cloned-init", INIT_TOKEN, seed=seed, settings={"after_restore_hook": True}).valid
    assert run_scenario("snapstart-cloned-init", IMPROVED, seed=seed).valid  # its owner token is per call
    again = run_scenario("snapstart-cloned-init", INIT_TOKEN, seed=seed)
    assert hashlib.sha256(again.history.to_json().encode()).digest() == \
        hashlib.sha256(cloned.history.to_json().encode()).digest()


def test_snapstart_needs_a_handler_file_in_environments():
    with Sandbox(seed=0, isolation="thread") as sb:
        with pytest.raises(BadInput, match="needs the handler as a file"):
            sb.function(NAIVE).use_snapstart()


def test_closing_the_world_leaves_no_snapshot_or_restored_process(tmp_path):
    handler = tmp_path / "facts.py"
    handler.write_text(textwrap.dedent(FACTS))
    with Sandbox(seed=0) as sb:
        fn = sb.function(f"{handler}:handler")
        fn.use_snapstart()
        fn.invoke({})
        pids = [env.pid for env in sb.runtime.environments]
        # The restored environment is a fork of the snapshot, inside its PID namespace: gone with that namespace.
        # The world names the snapshot's environment by its manager, which made that namespace for its children.
        namespace = os.readlink(f"/proc/{pids[0]}/ns/pid_for_children")
    assert len(pids) == 2  # the snapshot and one restored environment
    import time

    for _ in range(200):
        left = [p for p in os.listdir("/proc") if p.isdigit() and _pid_namespace(p) == namespace]
        if not left:
            break
        time.sleep(0.01)
    assert not left, f"processes {left} outlived their world"
    for pid in pids[:1]:
        for _ in range(200):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            try:
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
            except ChildProcessError:
                pass
            time.sleep(0.01)
        else:
            pytest.fail(f"process {pid} outlived its world")


def _pid_namespace(pid: str) -> str | None:
    """The PID namespace of a live process (None: gone, or a zombie, which runs nothing)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                return None
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None

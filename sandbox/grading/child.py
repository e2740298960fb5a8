"""``python -m sandbox.grading.child``: the process a submission is graded in.

The grading parent starts it with a job on stdin (the answer file, the tests to run as data,
their seeds, the limits) and a pipe for messages (``--fd``). In order, before any of the
submission's code runs: resource limits, every module the tests need, the recorder (each
record of each world's history goes down the pipe as it is written), the integrity snapshot
and the audit hook. Then it loads the answer once, runs the tests one by one and reports each
run. It judges nothing for the grade: the parent does, on its own copy of every history.

Messages, one JSON object a line: ``ready``; ``load`` (with ``error``); ``test-start``;
``group`` and ``rec`` (the recorder's); ``effect`` (the services' own word of each effect, apart
from the history); ``run`` (a ``RunInfo``); ``test-end``; ``alert``
(the audit hook refused something); ``tamper`` (the package changed); ``done``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import traceback
from typing import Any

#: Kinds of message on the pipe that share a word with the history's vocabulary (a different thing here).
PIPE_EFFECT, PIPE_DONE = "effect", "done"

_write = os.write  # taken before any submission code could replace it
_dumps = json.dumps


class Channel:
    """JSON lines down the pipe to the parent, one whole line at a time whatever thread writes."""

    def __init__(self, fd: int):
        self.fd, self.lock = fd, threading.Lock()

    def send(self, message: dict[str, Any]) -> None:
        data = (_dumps(message, default=str) + "\n").encode()
        with self.lock:
            view = memoryview(data)
            while view:
                n = _write(self.fd, view)
                view = view[n:]


#: Modules the grading child never needs (plots, widgets, the grader's own parent side, command lines).
SKIPPED = ("sandbox.timeline", "sandbox.widgets", "sandbox.verdict_map", "sandbox.bench", "sandbox.campaign",
           "sandbox.capstone",
           "sandbox.matrix", "sandbox.grade", "sandbox.__main__", "sandbox.strip_outputs", "sandbox.grading.batch",
           "sandbox.grading.grader", "sandbox.grading.autograder", "sandbox.grading.__main__",
           "sandbox.grading.child", "sandbox.grading.quiz", "sandbox.grading.render", "sandbox.grading.check")


def _prepare() -> None:
    """Import every module of the package the tests may need, now: the integrity snapshot covers them all."""
    import importlib
    import pkgutil

    from ..world import Sandbox

    todo = ["sandbox"]
    while todo:
        package = importlib.import_module(todo.pop())
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            if info.name.startswith(SKIPPED):
                continue
            if info.ispkg:
                todo.append(info.name)
            else:
                importlib.import_module(info.name)
    with Sandbox() as sb:  # builds botocore's and moto's models for the services the scenarios use
        sb.table.put_item(Item={"pk": "warm-up"})
        sb.sqs.list_queues()


def _preflight(handler: str, function: str) -> str | None:
    """Load the answer once: None if it loads, else why not (the same for every test)."""
    from ..errors import BadInput
    from ..loader import load_handler, split_spec
    from ..world import Sandbox

    try:
        if function != "handler":
            split_spec(handler)
            return None
        with Sandbox():
            load_handler(handler, "preflight_answer")
        return None
    except BadInput as exc:  # a syntax error, no handler: the message says it all
        return str(exc)
    except BaseException as exc:  # the learner's module code: anything it raises is the answer
        return f"{type(exc).__name__}: {exc}"
    finally:
        sys.modules.pop("preflight_answer", None)


def _witness(recorder, channel: Channel) -> None:
    """The services tell the grader of each effect themselves, apart from the history: a count the
    grading parent compares with the effect records it received (a history hiding an effect disagrees)."""
    from .. import active
    from ..services import Services

    original = Services._record

    def _record(self, kind, key, inv, status, result):
        world = active.current()
        group = recorder.group_of(world.history) if world is not None else None
        channel.send({"t": PIPE_EFFECT, "g": group or 0, "kind": kind, "key": key, "status": status})
        return original(self, kind, key, inv, status, result)

    Services._record = _record


def _guard(job: dict[str, Any], channel: Channel):
    from .. import active
    from ..vocab import RecordType
    from .guard import SANDBOX_DIR, Guard, Integrity, python_roots, world_methods, world_problems
    from .recorder import Recorder

    integrity_box: dict[str, Any] = {}
    opened: dict[str, Any] = {"world": None, "methods": {}}

    def on_record(record: dict[str, Any]) -> None:
        world = active.current()
        if world is not None and world is not opened["world"]:  # its first record: no handler has run yet
            opened.update(world=world, methods=world_methods(world))
        if record.get("type") == RecordType.INVOKE_END:
            _integrity(integrity_box["i"], channel)
            if world is not None and recorder.last_world_history is not None:
                changed = world_problems(world, recorder.last_world_history, opened["methods"])
                if changed:
                    channel.send({"t": "tamper", "what": f"the submission changed the world: {'; '.join(changed)}"})
                    os._exit(3)

    recorder = Recorder(channel.send, on_record).install()
    _witness(recorder, channel)
    integrity_box["i"] = Integrity()
    work = os.path.dirname(job["handler"].rpartition(":")[0])
    guard = Guard(python_roots() + [SANDBOX_DIR, work, "/etc", "/usr/share"], [work],
                  lambda text: channel.send({"t": "alert", "what": text}), listable=sys.path)
    guard.install()
    return recorder, integrity_box["i"]


def _integrity(integrity, channel: Channel) -> None:
    changed = integrity.check()
    if changed:
        channel.send({"t": "tamper", "what": f"the submission changed the sandbox: {', '.join(changed[:5])}"})
        os._exit(3)


def run(job: dict[str, Any], channel: Channel) -> None:
    from .catalog import Test
    from .runner import Runner

    _prepare()
    recorder, integrity = _guard(job, channel)
    channel.send({"t": "ready"})
    error = _preflight(job["handler"], job["function"])
    channel.send({"t": "load", "error": error})
    if error is not None:
        return
    runner = Runner(job["handler"], recorder, lambda info: channel.send({"t": "run", "info": info.to_dict()}),
                    watchdog=job.get("watchdog", 2.0))
    for entry in job["tests"]:
        channel.send({"t": "test-start", "i": entry["index"]})
        summary = runner.run_test(entry["index"], Test.from_dict(entry["test"]), entry["seeds"])
        _integrity(integrity, channel)
        channel.send({"t": "test-end", "i": entry["index"], "summary": summary})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox.grading.child")
    p.add_argument("--fd", type=int, required=True, help="the pipe to the grading parent")
    args = p.parse_args(argv)
    job = json.loads(sys.stdin.read())
    from .guard import limit

    limit(job["limits"]["memory_mb"], job["limits"]["cpu_seconds"])
    channel = Channel(args.fd)
    try:
        run(job, channel)
        channel.send({"t": PIPE_DONE})
    except BaseException:  # a grader failure, reported as such, never the learner's fault silently
        channel.send({"t": "crash", "what": traceback.format_exc()[-2000:]})
    sys.stdout.flush()
    os._exit(0)  # threads a submission left blocked must not keep the process alive


if __name__ == "__main__":
    sys.exit(main())

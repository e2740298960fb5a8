"""``python -m sandbox.grading.child``: the world a submission is graded in.

The grading parent starts it with a job on stdin (the answer file, the tests to run as data,
their seeds, the limits, the isolation) and a pipe for messages (``--fd``). The submission's
code never runs in this process: every world here runs it in execution environments of their
own (``sandbox.runtime.environment``), under bubblewrap unless the grader was told otherwise, so the
submission cannot reach the world, this pipe, the tests or the grader's files. In order:
resource limits, every module the tests need, the recorder (each record of each world's history
goes down the pipe as it is written); then the answer's init, once, in an environment; then the
tests one by one. It judges nothing for the grade: the parent does, on its own copy of every
history.

Messages, one JSON object a line: ``ready``; ``load`` (with ``error``); ``test-start``;
``group`` and ``rec`` (the recorder's); ``effect`` (each effect as the services record it);
``run`` (a ``RunInfo``); ``test-end``; ``done``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the child imports what it needs when it needs it; these are only names for mypy
    from ..core.records import RecordJson
    from .shapes import GradingJob, PipeMessage

#: Kinds of message on the pipe that share a word with the history's vocabulary (a different thing here).
PIPE_EFFECT, PIPE_DONE = "effect", "done"

_write = os.write  # taken before any submission code could replace it
_dumps = json.dumps


class Channel:
    """JSON lines down the pipe to the parent, one whole line at a time whatever thread writes."""

    def __init__(self, fd: int):
        self.fd, self.lock = fd, threading.Lock()

    def send(self, message: PipeMessage) -> None:
        data = (_dumps(message, default=str) + "\n").encode()
        with self.lock:
            view = memoryview(data)
            while view:
                n = _write(self.fd, view)
                view = view[n:]


#: Modules the grading child never needs (plots, widgets, the grader's own parent side, command lines).
SKIPPED = ("sandbox.present.timeline", "sandbox.present.widgets", "sandbox.present.verdict_map",
           "sandbox.present.stage", "sandbox.present.gallery", "sandbox.bench",
           "sandbox.tools", "sandbox.cli", "sandbox.__main__", "sandbox.analysis.campaign", "sandbox.analysis.capstone",
           "sandbox.analysis.matrix", "sandbox.grading.classroom", "sandbox.grading.batch", "sandbox.grading.grader",
           "sandbox.grading.autograder", "sandbox.grading.__main__", "sandbox.grading.child", "sandbox.grading.quiz",
           "sandbox.grading.render", "sandbox.grading.exercise_check")


def import_grading_modules() -> None:
    """Import every module of the package the tests may need (all but ``SKIPPED``), with only the grading
    requirements installed: the Gradescope image has no ipywidgets or JupyterLab (``autograder.LAB_ONLY``)."""
    import importlib
    import pkgutil

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


def _prepare() -> None:
    """Import every module the tests may need, now: the integrity snapshot covers them all."""
    from ..world import Sandbox

    import_grading_modules()
    with Sandbox() as sb:  # builds botocore's and moto's models for the services the scenarios use
        sb.table.put_item(Item={"pk": "warm-up"})
        sb.sqs.list_queues()


def _preflight(handler: str, function: str) -> str | None:
    """The answer's init, once, in an environment of its own: None if it loads, else why not.

    A module that raises as it loads is told so, as Lambda would, before it is told it has no handler.
    """
    from ..errors import BadInput, MissingHandler
    from ..runtime.loader import HandlerSpec, check_handler_file
    from ..world import Sandbox

    missing = None
    try:
        if function != "handler":
            HandlerSpec.parse(handler)
            return None
        check_handler_file(handler)
    except MissingHandler as exc:
        missing = str(exc)
    except BadInput as exc:  # a syntax error: the message says it all
        return str(exc)
    with Sandbox() as sb:
        error = sb.runtime.deploy(handler, check_names=False).init_error()
    if error is not None:
        error = error.removeprefix("Runtime.InitError: ")  # "does not load" says it already
    if error is not None and "Runtime.HandlerNotFound" not in error:
        return error
    return missing or error


def _witness(recorder, channel: Channel):
    """Each effect as the services record it, apart from the history (the parent counts them)."""
    from ..core import active
    from ..vocab import RecordType

    def on_record(record: RecordJson) -> None:
        if record.get("type") == RecordType.EFFECT:
            world = active.current()
            group = recorder.group_of(world.history) if world is not None else None
            channel.send({"t": PIPE_EFFECT, "g": group or 0, "kind": record.get("kind"), "key": record.get("key"),
                          "status": record.get("status")})

    return on_record


def run(job: GradingJob, channel: Channel) -> None:
    from .catalog import Test
    from .runner import WATCHDOG, Runner

    os.environ["RWH_ISOLATION"] = job.get("isolation", "contained")
    _prepare()
    from ..runtime.environment.host import Template

    # The environments' template starts now, inside the start-up budget, not in the first test's.
    Template.get(contained=os.environ["RWH_ISOLATION"] == "contained")
    from .recorder import Recorder

    recorder = Recorder(channel.send).install()
    recorder.on_record = _witness(recorder, channel)
    channel.send({"t": "ready"})
    error = _preflight(job["handler"], job["function"])
    channel.send({"t": "load", "error": error})
    if error is not None:
        return
    runner = Runner(job["handler"], recorder, lambda info: channel.send({"t": "run", "info": info.to_dict()}),
                    watchdog=job.get("watchdog", WATCHDOG))
    for entry in job["tests"]:
        channel.send({"t": "test-start", "i": entry["index"]})
        summary = runner.run_test(entry["index"], Test.from_dict(entry["test"]), entry["seeds"])
        channel.send({"t": "test-end", "i": entry["index"], "summary": summary})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m sandbox.grading.child")
    p.add_argument("--fd", type=int, required=True, help="the pipe to the grading parent")
    args = p.parse_args(argv)
    job = json.loads(sys.stdin.read())
    from .limits import limit

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

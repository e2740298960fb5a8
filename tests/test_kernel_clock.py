"""The kernel's clock is never the sandbox's: virtual time lives in the world's own threads only.

Lesson 07 keeps an interactive run open across cells. The world's clock reads 2026-01-05, and while
the world was open the whole kernel read it too: the notebook's ``time.time()``, ``datetime.now()``,
and the timestamps Jupyter puts on its replies (nbclient then reported cell durations of -28,910,566 s).
"""
import datetime as dt
import threading
import time

import nbformat
import pytest
from nbclient import NotebookClient

from sandbox import Sandbox, open_scenario
from sandbox.core.clock import DEFAULT_EPOCH

from conftest import ROOT

READ_THEN_WRITE = str(ROOT / "examples" / "read_then_write.py") + ":handler"

#: Each cell ends by printing what the kernel's own clocks say.
_READ = "import time, datetime as dt; print('clocks', time.time(), dt.datetime.now(dt.UTC).timestamp(), " \
        "dt.datetime.now().timestamp())"

CELLS = [
    f"from sandbox import open_scenario\nrun = open_scenario('concurrent-claims', {READ_THEN_WRITE!r}, "
    f"policy='interactive')\nrun.until_choice()\n{_READ}",
    f"run.step('inv-1')\n{_READ}",
    _READ,  # between steps: the world waits at its gate, the kernel carries on
    f"run.step('inv-2')\nassert run.clock.now() < {DEFAULT_EPOCH + 3600}, run.clock  # the world keeps its own time\n"
    f"{_READ}",
    f"result = run.finish()\n{_READ}",
]


def _readings(cell) -> list[float]:
    text = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream")
    line = next(line for line in text.splitlines() if line.startswith("clocks "))
    return [float(v) for v in line.split()[1:]]


@pytest.mark.notebook
def test_an_open_interactive_run_leaves_the_kernels_clock_true_and_its_cell_durations_positive():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in CELLS])
    client = NotebookClient(nb, timeout=120, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "notebooks")}})
    before = time.time()
    client.execute()
    after = time.time()
    for i, cell in enumerate(nb.cells):
        timing = {k: dt.datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp()
                  for k, v in cell.metadata["execution"].items()}
        busy, began, reply = timing["iopub.status.busy"], timing["iopub.execute_input"], timing["shell.execute_reply"]
        assert before - 1 <= busy <= began <= reply <= after + 1, (i, cell.metadata["execution"])
        for reading in _readings(cell):  # within a second of the machine's clock while the cell ran
            assert began - 1 <= reading <= reply + 1, (i, dt.datetime.fromtimestamp(reading, dt.UTC))


def test_a_thread_that_is_not_the_worlds_reads_the_machines_time_while_a_world_is_open():
    """The kernel's other threads (IOPub, heartbeat, the caller's) keep true time; the world's own reads its clock."""
    seen: dict[str, float] = {}

    def outside():
        seen["time"], seen["now"] = time.time(), dt.datetime.now(dt.UTC).timestamp()

    with Sandbox(seed=0) as sb:
        sb.advance(5)
        inside = time.time(), dt.datetime.now(dt.UTC).timestamp()
        thread = threading.Thread(target=outside)
        thread.start()
        thread.join()
    assert inside == (DEFAULT_EPOCH + 5, DEFAULT_EPOCH + 5)
    assert abs(seen["time"] - time.time()) < 5 and abs(seen["now"] - time.time()) < 5, seen


def test_between_steps_the_caller_reads_true_time_and_the_world_its_own():
    run = open_scenario("concurrent-claims", READ_THEN_WRITE, policy="interactive")
    try:
        run.until_choice()
        run.step("inv-1")
        assert abs(time.time() - dt.datetime.now(dt.UTC).timestamp()) < 1
        assert time.time() > DEFAULT_EPOCH + 86400, "the caller's thread read the world's clock"
        assert run.clock.now() < DEFAULT_EPOCH + 60
        inv1 = [r for r in run.history if r.get("inv") == "inv-1"]
        assert inv1 and all(r["t"] < 60 for r in inv1)
    finally:
        run.close()


def test_the_worlds_own_threads_read_its_clock_and_moto_stamps_a_request_from_any_thread_with_it():
    """What needs virtual time in this process keeps it: a handler run in-process (a Python function, as
    "thread" isolation runs it), the threads it starts, and moto's own stamps (SQS SentTimestamp), even
    for a request another thread makes."""
    seen: dict[str, float] = {}

    def handler(event, context):
        seen["handler"], seen["handler_now"] = time.time(), dt.datetime.now(dt.UTC).timestamp()
        worker = threading.Thread(target=lambda: seen.__setitem__("its_thread", time.time()))
        worker.start()
        worker.join()
        return "ok"

    with Sandbox(seed=0, isolation="thread") as sb:
        sb.advance(42)
        assert sb.function(handler).invoke({"orderId": "o-1"}).outcome == "ok"
        url = sb.sqs.create_queue(QueueName="stamps")["QueueUrl"]
        sender = threading.Thread(target=lambda: sb.sqs.send_message(QueueUrl=url, MessageBody="x"))
        sender.start()
        sender.join()
        sent_at = sb.clock.now()
        message = sb.sqs.receive_message(QueueUrl=url, AttributeNames=["SentTimestamp"])["Messages"][0]
    for name, reading in seen.items():
        assert DEFAULT_EPOCH + 42 <= reading < DEFAULT_EPOCH + 60, (name, reading)
    assert int(message["Attributes"]["SentTimestamp"]) == int(sent_at * 1000)

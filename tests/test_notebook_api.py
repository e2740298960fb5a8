"""The API the notebooks use: rerunning a failed cell, stepping, playing the scheduler,
rich display and widgets built from settings."""
from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

import sandbox
from sandbox import BadInput, History, Sandbox, SandboxError, open_scenario, run_scenario
from sandbox.modes.stepping import STEP_TICK

from conftest import ROOT, example

READ_THEN_WRITE = example("read_then_write.py")
IDEMPOTENT = example("idempotent.py")
NAIVE = example("naive_email.py")


# -- rerunning a failed cell in a real kernel ------------------------------------------------------
def test_a_cell_that_failed_with_its_world_open_does_not_block_the_next_one():
    nb = nbformat.v4.new_notebook()
    failing = nbformat.v4.new_code_cell(
        "from sandbox import Sandbox\n"
        "sb = Sandbox(seed=2).open()  # no `with`: the world stays open when the cell fails\n"
        "sb.table.put_item(Item={'pk': 'half-done'})\n"
        "raise RuntimeError('the learner made a typo')")
    failing.metadata["tags"] = ["raises-exception"]
    nb.cells = [failing,
                nbformat.v4.new_code_cell(
                    "with Sandbox(seed=3) as again:\n"
                    "    items = again.items()\n"
                    "print('items:', items, '| old world open:', sb.is_open)")]
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    first, second = (c.outputs for c in nb.cells)
    assert [o.ename for o in first if o.output_type == "error"] == ["RuntimeError"]
    streams = {o.name: o.text for o in second if o.output_type == "stream"}
    assert streams["stderr"].strip() == "note: closed the sandbox world (seed 2) that an earlier cell left open"
    assert streams["stdout"].strip() == "items: [] | old world open: False"


# -- a handler defined in a cell runs in environments of its own -----------------------------------
def test_a_cells_handler_runs_in_its_own_environments_with_what_it_uses_from_other_cells(tmp_path):
    """The cell becomes lambda_function.py: module state is per environment (a claim set in the kernel's
    memory was shared by every container and judged valid), what it takes from other cells travels,
    statements that drive the sandbox stay in the notebook, and an object that cannot travel is named."""
    (tmp_path / "helper_mod.py").write_text("PREFIX = 'order-confirmation#'\n")
    cells = [
        "import os\nfrom sandbox import Sandbox, orders_in, run_scenario, send_confirmation_email",
        "SUFFIX = '!'\n\ndef key_of(order):\n    return helper_mod.PREFIX + order['orderId'] + SUFFIX\n\n"
        "import helper_mod\nshared = object()",
        "_claimed = set()\n\n"
        "def handler(event, context):\n"
        "    for order in orders_in(event):\n"
        "        if key_of(order) not in _claimed:\n"
        "            _claimed.add(key_of(order))\n"
        "            send_confirmation_email(order)\n"
        "    return {'pid': os.getpid(), 'keys': sorted(_claimed)}\n\n"
        "together = run_scenario('concurrent-claims', handler, seed=0)\n"
        "print(together.status, together.verdict.effects_per_key)",
        "with Sandbox(seed=0) as sb:\n"
        "    inv = sb.function(handler).invoke({'orderId': 'o-9', 'email': 'a@example.com', 'amount': 1})\n"
        "print(inv.outcome, inv.result['pid'] != os.getpid(), inv.result['keys'])",
        "def uses_shared(event, context):\n    return str(shared)\n\n"
        "try:\n    run_scenario('no-fault', uses_shared)\nexcept Exception as exc:\n    print(type(exc).__name__, exc)",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    printed = ["".join(o.text for o in c.outputs if o.output_type == "stream").strip() for c in nb.cells]
    assert printed[2] == "invalid {'o-1': {'email': 2}}"
    assert printed[3] == "ok True ['order-confirmation#o-9!']"
    assert printed[4].startswith("BadInput the handler's cell uses 'shared', a object made in another cell")


# -- stepping through a scenario -------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_stepping_to_the_end_gives_the_same_history_as_an_unattended_run(seed):
    run = open_scenario("concurrent-claims", READ_THEN_WRITE, seed=seed)
    while not run.done:
        run.step()
    stepped = run.finish()
    plain = run_scenario("concurrent-claims", READ_THEN_WRITE, seed=seed)
    assert stepped.history.to_json() == plain.history.to_json()
    assert stepped.status == plain.status and len(run.steps) > 4


def test_each_step_says_who_moved_and_what_it_did_and_the_world_can_be_inspected():
    run = open_scenario("concurrent-claims", IDEMPOTENT, seed=1)
    taken = []
    while not run.done and not run.outbox:
        taken.append(run.step())
        if any(r["type"] == "aws" and r["op"] == "PutItem" and r["result"] == "ok" for r in taken[-1].records):
            claimed = run.items()
            assert [(i["pk"], i["status"]) for i in claimed] == [("order-confirmation#o-1", "IN_PROGRESS")]
    assert run.outbox and run.outbox[0]["orderId"] == "o-1"
    assert all(s.who.startswith("inv-") for s in taken)
    assert any(s.does == "dynamodb.PutItem" for s in taken)
    assert "dynamodb.PutItem" in str(next(s for s in taken if s.does == "dynamodb.PutItem"))
    result = run.finish()
    assert result.valid and result.history.end_time() >= taken[-1].t
    with pytest.raises(SandboxError, match="over"):
        run.step()


def test_a_scenario_that_cannot_start_says_why_at_once():
    with pytest.raises(BadInput, match="fail_order 9 is beyond"):
        open_scenario("sqs-batch-failure", NAIVE, settings={"fail_order": 9})


# -- playing the scheduler -------------------------------------------------------------------------
def test_the_learner_finds_the_read_then_write_race_by_hand():
    run = open_scenario("concurrent-claims", READ_THEN_WRITE, policy="interactive")
    run.until_choice()
    assert {c.who: c.does for c in run.choices()} == {"inv-1": "dynamodb.GetItem", "inv-2": "dynamodb.GetItem"}
    with pytest.raises(BadInput, match="you are the scheduler"):
        run.step()
    with pytest.raises(BadInput, match="'inv-9' cannot move now"):
        run.step("inv-9")
    run.step("inv-1")  # reads: missing
    run.step("inv-2")  # reads: missing too
    result = run.finish()
    assert result.status == "invalid" and result.verdict.effects_per_key == {"o-1": {"email": 2}}


def test_a_step_that_sends_an_email_names_it_and_its_answer_in_the_same_words():
    """Lesson 07 (issue 31): a learner stepping inv-1 read "inv-1 (email) -> nothing recorded", then saw the next
    step called "email call": two words for one email, and nothing named where the request went out."""
    run = open_scenario("concurrent-claims", READ_THEN_WRITE, policy="interactive")
    run.until_choice()
    steps = []
    while any(choice.who == "inv-1" for choice in run.choices()):
        steps.append(run.step("inv-1"))
    email = steps[-1]
    assert email.does == "email" and email.records == [] and email.next == "email answer"
    assert str(email).endswith("-> email request sent; its answer is inv-1's next step (email answer)")
    assert "nothing recorded" not in str(email)
    # each step takes 25 ms: the request went out when its step began, not after its tick (a learner read
    # "step 5 at 0.125 s" and "step 6 at 0.125 s" against "25 ms a step")
    times = [s.t for s in steps]
    assert times == pytest.approx([times[0] + i * STEP_TICK for i in range(len(times))])
    assert str(email).startswith(f"step {email.number} at {times[-1]:.3f} s")
    run.finish()


def test_the_same_handler_is_safe_when_one_read_comes_after_the_other_write():
    run = open_scenario("concurrent-claims", READ_THEN_WRITE, policy="interactive")
    run.until_choice()
    while run.choices() and any(c.who == "inv-1" for c in run.choices()):
        run.step("inv-1")  # inv-1 reads, writes and sends before inv-2 looks
    assert run.finish().valid


def test_a_run_left_open_is_closed_by_the_next_world():
    run = open_scenario("concurrent-claims", READ_THEN_WRITE, policy="interactive")
    with Sandbox(seed=5) as sb:
        assert sb.is_open and not run.world.is_open
    with pytest.raises(SandboxError, match="closed before it finished"):
        run.finish()


# -- rich display ----------------------------------------------------------------------------------
def test_history_verdict_and_result_render_as_html_and_plain_text():
    result = run_scenario("no-fault", NAIVE, seed=1)
    html = result._repr_html_()
    assert "no-fault" in html and "valid" in html and "<table" in html
    assert repr(result) == "<RunResult no-fault seed=1: valid>"
    bad = run_scenario("sqs-batch-failure", NAIVE)
    assert "duplicate" in bad.verdict._repr_html_() and "o-1: email sent 2 times" in bad.verdict._repr_html_()
    history_html = bad.history._repr_html_()
    assert history_html.count("<tr>") == len(bad.history) + 1
    assert repr(bad.history).startswith(f"History({len(bad.history)} records")


def test_html_escapes_what_a_handler_wrote():
    h = History({"seed": 0}, [{"seq": 0, "t": 0.0, "type": "note", "text": "<script>alert(1)</script>"}])
    assert "<script>" not in h._repr_html_() and "&lt;script&gt;" in h._repr_html_()


def test_plotting_and_the_verdict_are_at_the_top_level():
    result = run_scenario("no-fault", NAIVE)
    assert result.valid is True and result.status == "valid"
    assert sandbox.plot_timeline(result.history)._repr_png_()[:4] == b"\x89PNG"


# -- widgets from the settings' own metadata -------------------------------------------------------
def test_controls_follow_each_settings_type_range_and_help():
    import ipywidgets as w

    controls = sandbox.setting_controls("sqs-batch-failure")
    assert list(controls) == list(sandbox.get_scenario("sqs-batch-failure").all_settings())
    assert isinstance(controls["payment"], w.Dropdown) and controls["payment"].options == ("none", "card")
    assert isinstance(controls["report_batch_item_failures"], w.Checkbox)
    window = controls["batching_window"]
    assert isinstance(window, w.IntSlider) and (window.min, window.max, window.value) == (0, 300, 0)
    assert "MaximumBatchingWindowInSeconds" in window.tooltip
    assert isinstance(controls["horizon"], w.BoundedFloatText)  # 14 days is too wide for a slider
    narrowed = sandbox.setting_controls("ttl-lag", only=["ttl_lag"], spans={"ttl_lag": (0, 86400, 3600)})
    assert isinstance(narrowed["ttl_lag"], w.BoundedFloatText)
    with pytest.raises(BadInput, match="no setting 'colour'"):
        sandbox.setting_controls("no-fault", only=["colour"])


def test_moving_a_control_reruns_the_scenario_and_redraws_verdict_and_timeline():
    explorer = sandbox.explore_settings("sqs-batch-failure", NAIVE, only=["report_batch_item_failures", "fail_order"])
    assert explorer.result.status == "invalid" and explorer.runs == 1
    first_image = explorer.image.value
    explorer.controls["fail_order"].value = 0  # no provider failure: no redelivery
    assert explorer.runs == 2 and explorer.result.status == "valid"
    assert "valid" in explorer.verdict.value and explorer.image.value != first_image
    explorer.controls["fail_order"].value = 3
    assert explorer.result.status == "invalid" and explorer.image.value == first_image


def test_a_refused_combination_is_explained_not_raised():
    explorer = sandbox.explore_settings("sqs-batch-failure", NAIVE, only=["batch_size", "batching_window"],
                                        plot=False)
    explorer.controls["batch_size"].value = 50  # above 10 needs a batching window
    assert explorer.result is None and "needs MaximumBatchingWindowInSeconds" in explorer.verdict.value
    explorer.controls["batching_window"].value = 1
    assert explorer.result is not None and explorer.result.status == "invalid"


_FIRST_RUN = """
import os, sys, types
if os.environ.get("FAKE_KERNEL"):
    sys.modules["ipykernel"] = types.ModuleType("ipykernel")  # what a Jupyter kernel has loaded
from sandbox.runtime.environment import template_process
started = []
template_process.Template.warm_up = classmethod(lambda cls, contained=False: started.append("moto" in sys.modules))
import sandbox
sandbox.run_scenario, sandbox.explore_settings
print(started)
"""


@pytest.mark.parametrize("kernel, isolation, started", [("1", "", "[False]"), ("", "", "[]"), ("1", "thread", "[]")])
def test_a_kernel_starts_the_environments_template_before_the_world_loads(kernel, isolation, started):
    """In a notebook the template does its imports while the kernel imports the world (not after, in the first
    run); a script or a thread-isolated kernel starts nothing it may not need."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "FAKE_KERNEL": kernel, "RWH_ISOLATION": isolation or "process"}
    out = subprocess.run([sys.executable, "-c", _FIRST_RUN], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == started

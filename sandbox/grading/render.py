"""Feedback as people read it: text for the shell and the grader's reports, HTML in Jupyter."""
from __future__ import annotations

import base64
import html
import io
from typing import Any, Protocol

from .catalog import Exercise
from .scoring import ItemResult, TestResult


class Checked(Protocol):
    """What a check found, as this module reads it (``check.CheckResult`` is the one there is)."""

    exercise: Exercise
    handler: str
    items: list[ItemResult]
    seconds: float
    campaign_seeds: list[int]
    preview: str | None
    saved_to: str | None
    backup: str | None
    tests_changed: str | None

    @property
    def passed(self) -> bool: ...

    @property
    def failed(self) -> list[ItemResult]: ...

    @property
    def score(self) -> float: ...

    @property
    def max_score(self) -> int: ...

PASS, FAIL = "✓", "✗"
#: Which items give partial credit, said once wherever the items are listed (each item's line is tagged).
CREDIT_RULE = ("Credit: an item tagged 'credit per seed' earns the share of its seeds that held, unless one of its "
               "tests that is all or nothing failed; one tagged 'all or nothing' (every interleaving, a drill, a "
               "question, a single seed) earns its points only if it passes. An item's points count once, however "
               "many tests it has.")


def _named(test: Any) -> str:
    """A test by its kind, name and settings ("scenario sqs-batch-failure (poison=1)", "drill no-key"), no seed."""
    if test.kind == "question":
        return f"question {test.question}"
    what = f"drill {test.drill}" if test.drill else f"scenario {test.scenario}"
    if test.settings:
        what += " (" + ", ".join(f"{k}={v}" for k, v in test.settings.items()) + ")"
    return what


def _where(t: TestResult) -> str:
    test, f = t.test, t.failure
    what = _named(test)
    if test.kind == "question":
        return what
    if f is not None and f.script:
        what += ", the schedule " + ",".join(f.script)
    elif f is not None and f.seed is not None:
        what += f", seed {f.seed}"
    return what


def _plural(n: float, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


#: Why a test is all or nothing, by its kind (``catalog.Test.kind``).
_WHOLE = {"question": "a question", "drill": "a drill", "exhaustive": "every interleaving", "seeds": "a single seed"}


def credit_text(item: ItemResult) -> str | None:
    """What a failed item judged per seed still earned: "3 of 4 seeds held: 1.5 of 2 points"; or, when a test of it
    that is all or nothing failed, that this test is why it earned nothing (never "2 of 2 held: 0 points" alone)."""
    if item.passed or not item.partial:
        return None
    held, total = item.seeds
    points = f"{item.score} of {_plural(item.points, 'point')}"
    blocker = item.blocker
    if blocker is None:
        return f"{held} of {_plural(total, 'seed')} held: {points}"
    which = "this test" if blocker is item.failure else f"{_named(blocker.test)}, which failed too,"
    return (f"{points}: {which} is all or nothing ({_WHOLE[blocker.test.kind]}), so the item earns nothing while "
            f"it fails, whatever the seeds of its per-seed tests held ({held} of {total})")


def failure_text(item: ItemResult, timeline: bool = True) -> list[str]:
    """The lines that tell one failed item: where, what happened, why, the timeline, the replay."""
    t = item.failure
    if t is None:
        return []
    lines = [f"{item.item} failed: {_where(t)}"]
    if item.requirement:
        lines.append(f"  it checks {item.requirement}")
    credit = credit_text(item)
    if credit:
        lines.append(f"  {credit}" + ("" if item.blocker else " (credit per seed)"))
    if t.reason:
        return lines + [f"  {t.reason}"]
    f = t.failure
    if f is None:
        return lines
    lines += ["  what happened:"] + [f"    {line}" for line in f.explanation.splitlines()]
    lines += [f"  hint: {h.text}" for h in f.hints[:2]]
    if timeline and f.timeline:
        lines += ["  timeline:"] + [f"  {line}" for line in f.timeline.splitlines()]
    if f.replay:
        lines += ["  replay it (from the repository root):", f"    {f.replay}"]
    return lines


def _shared_reason(item: ItemResult) -> str | None:
    """Why a question failed, when that reason is the whole answer's, not the question's (answers() raised, or
    returned something other than a dict): the same words for every question, with no hint of its own."""
    t = item.failure
    if t is None or t.test.kind != "question" or t.reason or t.failure is None or t.failure.hints:
        return None
    return t.failure.explanation


def failure_blocks(failed: list[ItemResult]) -> list[list[ItemResult]]:
    """The failed items as the blocks that explain them: one per item, except that questions failing for the
    same whole-answer reason share one block, so that reason is said once."""
    blocks: list[list[ItemResult]] = []
    shared: dict[str, list[ItemResult]] = {}
    for item in failed:
        reason = _shared_reason(item)
        if reason is None:
            blocks.append([item])
        elif reason in shared:
            shared[reason].append(item)
        else:
            shared[reason] = [item]
            blocks.append(shared[reason])
    return blocks


def block_text(block: list[ItemResult], timeline: bool = True) -> list[str]:
    """``failure_text`` of one item, or of several questions that failed for one reason, said once."""
    if len(block) == 1:
        return failure_text(block[0], timeline)
    names = [i.item for i in block]
    which = f"{', '.join(names[:-1])} and {names[-1]}"
    failed = block[0].failure
    assert failed is not None and failed.failure is not None  # a block of several shares its failure
    return ([f"questions {which} failed, all for one reason", "  what happened:"]
            + [f"    {line}" for line in failed.failure.explanation.splitlines()])


def credit_tag(item: ItemResult) -> str:
    if not item.partial:
        return "all or nothing"
    if item.passed:
        return "credit per seed"
    blocker = item.blocker
    if blocker is not None:
        return f"no credit: {_named(blocker.test)} failed, and it is all or nothing"
    held, total = item.seeds
    return f"credit per seed: {held} of {total} held"


def item_line(item: ItemResult) -> str:
    """One item: its score, what it checks (the failed test's words when one failed), and how it is credited. An
    item of several tests says how many, and how many failed, so its line is not read as its only test's."""
    mark = PASS if item.passed else FAIL
    runs = sum(t.runs for t in item.tests)
    count = len(item.tests)
    failed = sum(not t.passed for t in item.tests)
    tests = "" if count < 2 else f"{count} tests" + (f" ({failed} failed)" if failed else "") + ", "
    return (f"  {mark} {item.item} ({item.score}/{item.points}): {item.said} "
            f"[{tests}{_plural(runs, 'run')}, {credit_tag(item)}]")


def hidden_line(secret: list[ItemResult]) -> str:
    """What the student is told of the hidden items: how many passed and the points, never what they test."""
    passed = sum(i.passed for i in secret)
    return (f"hidden tests: {passed} of {len(secret)} items passed ({sum(i.score for i in secret)}/"
            f"{sum(i.points for i in secret)} points); what they test is not shown")


def notes(r: Checked) -> list[str]:
    """What the learner must know before reading the score: work kept aside, a tests list that is not the exercise's."""
    out = []
    if r.backup:
        out.append(f"{r.saved_to or 'the answer file'} had been edited outside this notebook. Your edited version "
                   f"is kept as {r.backup}; check runs the notebook's answer cell, so copy what you want from the "
                   f".bak file into that cell and run check again.")
    if r.tests_changed:
        out.append(f"the TESTS list in your notebook is not exercise {r.exercise.id}'s ({r.tests_changed}). "
                   f"check ran the exercise's own {len(r.exercise.tests)} public tests, listed below, whatever "
                   f"the list says.")
    return out


def campaign_line(r: Checked) -> str:
    return (f"Campaign: fresh seeds from {r.campaign_seeds[0]} (check(..., campaign_seed={r.campaign_seeds[0]}) "
            f"repeats them; from the shell, --campaign-seed {r.campaign_seeds[0]})")


def check_text(r: Checked) -> str:
    ex = r.exercise
    head = (f"Exercise {ex.id} · {ex.title}: {r.score}/{r.max_score} on the public tests, "
            f"in {r.seconds:.1f} s, checking {r.handler}")
    lines = [head]
    lines += [f"NOTE: {note}" for note in notes(r)]
    if r.saved_to:
        lines.append(f"(your answer cell was saved to {r.saved_to})")
    lines += [item_line(i) for i in r.items]
    lines.append(CREDIT_RULE)
    if r.campaign_seeds:
        lines.append(campaign_line(r))
    for block in failure_blocks(r.failed):  # every failing item explained, each with its own replay
        lines += [""] + block_text(block)
    if r.passed:
        lines += ["", "All the public tests pass. The grader also runs hidden tests, with fresh seeds."]
        if ex.next:
            lines += ["", f"Next: {ex.next}"]
        if r.preview:  # the next exercise's case, not this one's: indented under "Next:", and it says so
            lines += [f"  {line}" for line in r.preview.splitlines()]
    return "\n".join(lines)


def timeline_png(history: Any) -> str | None:
    """A history's timeline drawn as a PNG, base64 (for a ``data:`` URI), or None if it cannot be drawn."""
    try:
        from ..present.timeline import plot_timeline

        fig = plot_timeline(history, width=11)
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        return base64.b64encode(buf.getvalue()).decode()
    except Exception:  # a figure is a bonus: the text timeline says the same
        return None


def failure_html(item: ItemResult, draw: bool = True, head: bool = True) -> str:
    """One failed item in HTML: the words of ``failure_text`` (without its first line, where it failed, unless
    ``head``: a fold shows that line as its title), the failing run's timeline drawn (with ``draw``), and the
    timeline in words, folded. Everything from the run (a submission's errors, its output) is escaped."""
    esc = html.escape
    f = item.failure.failure if item.failure else None
    lines = failure_text(item, timeline=False)
    parts = [f"<pre>{esc(chr(10).join(lines if head else lines[1:]))}</pre>"]
    picture = timeline_png(f.history) if draw and f is not None and f.history is not None else None
    if picture:
        parts.append(f"<img alt='timeline of the failing run' style='max-width:100%' "
                     f"src='data:image/png;base64,{picture}'/>")
    if f is not None and f.timeline:
        parts.append(f"<details><summary>timeline in words</summary><pre>{esc(f.timeline)}</pre></details>")
    return "".join(parts)


def check_html(r: Checked) -> str:
    esc = html.escape
    ex = r.exercise
    color = "#1a7f37" if r.passed else "#cf222e"
    parts = [f"<div><h4 style='color:{color}'>Exercise {esc(ex.id)} · {esc(ex.title)}: {r.score}/{r.max_score} "
             f"on the public tests ({r.seconds:.1f} s)</h4>"]
    parts += [f"<p style='color:#9a6700'><b>Note:</b> {esc(note)}</p>" for note in notes(r)]
    if r.saved_to:
        parts.append(f"<p>Your answer cell was saved to <code>{esc(r.saved_to)}</code>.</p>")
    parts.append("<ul>" + "".join(f"<li>{esc(item_line(i).strip())}</li>" for i in r.items) + "</ul>")
    parts.append(f"<p><small>{esc(CREDIT_RULE)}</small></p>")
    if r.campaign_seeds:
        parts.append(f"<p>{esc(campaign_line(r))}</p>")
    for n, block in enumerate(failure_blocks(r.failed)):
        # The first failing item is drawn; each later one is explained in words, folded under where it failed
        # (the list above already has its line). Questions that failed for one reason share one block.
        if len(block) > 1:
            parts.append(f"<pre>{esc(chr(10).join(block_text(block)))}</pre>")
            continue
        item = block[0]
        if not n:
            parts.append(failure_html(item))
            continue
        title = failure_text(item, timeline=False)[0]
        parts.append(f"<details><summary>{esc(title)}</summary>{failure_html(item, draw=False, head=False)}</details>")
    if r.passed:
        parts.append("<p>All the public tests pass. The grader also runs hidden tests, with fresh seeds.</p>")
        if ex.next:
            parts.append(f"<p><b>Next:</b> {esc(ex.next)}</p>")
        if r.preview:
            parts.append(f"<pre>{esc(r.preview)}</pre>")
    return "".join(parts) + "</div>"

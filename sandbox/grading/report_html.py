"""A student's feedback as one web page, ``feedback.html``, written beside ``feedback.txt``.

It says what ``feedback.txt`` says, with the timeline of each explained failure drawn inline: the public
items in full, the hidden ones only counted (nothing of their names, settings or runs). The page stands
alone (styles inline, pictures as ``data:`` URIs, a content security policy that allows nothing else), and
every text that comes from a submission (its file's name, its errors, its output in a timeline) is escaped.
The pieces are ``render``'s, shared with ``check()``'s HTML; a class's grades reach this module through the
protocols below, so it imports nothing that writes them.
"""
from __future__ import annotations

import html
from pathlib import Path
from typing import Any, Protocol

from .catalog import Exercise
from .render import CREDIT_RULE, failure_html, hidden_line, item_line
from .scoring import ItemResult

#: Failed public items told per exercise, as ``feedback.txt`` tells them.
EXPLAINED = 3
#: Of those, how many are drawn (the first): a picture takes about half a second, so a class of 30 with four
#: exercises costs at most a minute of drawing; the others keep their timeline in words.
DRAWN = 1

_POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
_STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; max-width: 70em; margin: 2em auto; padding: 0 1em; color: #1f2328; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; border-bottom: 1px solid #d0d7de; }
.pass { color: #1a7f37; } .fail { color: #cf222e; } .partial { color: #9a6700; } .note { color: #9a6700; }
ul.items { list-style: none; padding-left: 0; } ul.items li { margin: .2em 0; }
pre { background: #f6f8fa; padding: .6em; overflow-x: auto; white-space: pre-wrap; }
.failure { margin: 1.2em 0; padding-left: .8em; border-left: 3px solid #cf222e; }
img { max-width: 100%; }
"""


class GradedExercise(Protocol):
    """One exercise's grade, as this page reads it (``grader.ExerciseGrade`` is the one there is)."""

    exercise: Exercise
    items: list[ItemResult]
    reason: str | None
    tampering: list[str]
    source: str | None

    @property
    def score(self) -> float: ...

    @property
    def max_score(self) -> int: ...


class GradedStudent(Protocol):
    """A student's grades, as this page reads them (``batch.StudentGrade`` is the one there is)."""

    student: str
    grades: Any  # a list of GradedExercise

    @property
    def score(self) -> float: ...

    @property
    def max_score(self) -> int: ...

    def feedback(self, hidden: bool = False) -> str: ...


def _state(score: float, most: float) -> str:
    return "pass" if score == most else "partial" if score > 0 else "fail"


def exercise_html(g: GradedExercise) -> str:
    """One exercise: its score, why nothing was graded or tampering, the items, the failures explained."""
    esc = html.escape
    ex = g.exercise
    source = f" <small>({esc(g.source)})</small>" if g.source else ""
    parts = [f"<section><h2 class='{_state(g.score, g.max_score)}'>Exercise {esc(ex.id)} · {esc(ex.title)}: "
             f"{g.score}/{g.max_score}{source}</h2>"]
    if g.reason:
        parts.append(f"<p class='fail'>{esc(g.reason)}</p>")
    if g.tampering:
        parts.append("<p class='fail'><b>Tampering: graded zero.</b></p><ul>"
                     + "".join(f"<li>{esc(t)}</li>" for t in g.tampering) + "</ul>")
    shown = [i for i in g.items if not i.hidden]
    secret = [i for i in g.items if i.hidden]
    lines = [f"<li class='{_state(i.score, i.points)}'>{esc(item_line(i).strip())}</li>" for i in shown]
    if secret:
        lines.append(f"<li>{esc(hidden_line(secret))}</li>")
    parts.append("<ul class='items'>" + "".join(lines) + "</ul>")
    if not g.reason:  # a reason that stopped every test is said once, above
        for n, item in enumerate([i for i in shown if not i.passed][:EXPLAINED]):
            parts.append(f"<div class='failure'>{failure_html(item, draw=n < DRAWN)}</div>")
    return "".join(parts) + "</section>"


def student_html(s: GradedStudent) -> str:
    """The whole page for one student: only what ``feedback.txt`` shows them, with pictures."""
    esc = html.escape
    text = s.feedback()
    # What feedback.txt says before the first exercise (files not graded, lateness, how a file was recognised)
    # is taken as it is written, so this page never says less than the text.
    preamble = text.split("\n\n", 1)[0].splitlines()[1:]
    parts = ["<!doctype html><html lang='en'><head><meta charset='utf-8'>",
             f"<meta http-equiv='Content-Security-Policy' content=\"{_POLICY}\">",
             "<meta name='viewport' content='width=device-width, initial-scale=1'>",
             f"<title>Feedback · {esc(s.student)}</title><style>{_STYLE}</style></head><body>",
             f"<h1 class='{_state(s.score, s.max_score)}'>{esc(s.student)}: {s.score}/{s.max_score}</h1>"]
    if preamble:
        parts.append(f"<pre class='note'>{esc(chr(10).join(preamble))}</pre>")
    parts.append(f"<p><small>{esc(CREDIT_RULE)}</small></p>")
    parts += [exercise_html(g) for g in s.grades]
    parts.append(f"<details><summary>The same feedback as text (feedback.txt)</summary><pre>{esc(text)}"
                 "</pre></details></body></html>")
    return "\n".join(parts) + "\n"


def write_feedback_html(folder: Path, s: GradedStudent) -> Path:
    """Write ``feedback.html`` into the student's results folder; returns its path."""
    path = Path(folder) / "feedback.html"
    path.write_text(student_html(s), encoding="utf-8")
    return path

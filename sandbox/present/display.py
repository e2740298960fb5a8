"""How histories, verdicts and run results look in Jupyter: small, readable HTML tables.

Each object keeps a plain-text ``repr`` for the shell; these functions back their
``_repr_html_`` through ``views``, where this module registers them: the objects (a ``History``, a
``Verdict``, a ``RunResult``, a ``Matrix`` or ``KeyMatrix``) know nothing of their views, and this
module reads them by what they expose, importing none of them. Everything shown is escaped: a
history can carry a learner's text.
"""
from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

from ..core.records import RecordJson
from ..core.views import register_html
from ..vocab import FindingKind, RecordType, Status
from .timeline.style import VERDICT_COLOURS
from .timeline.timefmt import duration

#: What the checker's notes on the idempotency record are called, apart from the findings that judge a run.
NOTE_WORDS = "note on the idempotency record"
#: A history longer than this shows its first and last rows only.
MAX_ROWS = 60
_CELL = "padding:2px 8px;text-align:left;vertical-align:top;border-bottom:1px solid #e5e5e5"


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _table(headers: Iterable[str], rows: Iterable[Iterable[Any]], raw: bool = False) -> str:
    head = "".join(f'<th style="{_CELL}">{_e(h)}</th>' for h in headers)
    body = "".join("<tr>" + "".join(f'<td style="{_CELL}">{c if raw else _e(c)}</td>' for c in row) + "</tr>"
                   for row in rows)
    return f'<table style="border-collapse:collapse;font-size:13px"><thead><tr>{head}</tr></thead>' \
           f"<tbody>{body}</tbody></table>"


def describe_record(r: RecordJson) -> str:
    """One history record in a few words: what happened, to what, with what result."""
    kind = r.get("type")
    if kind == RecordType.ACCEPT:
        return f"order {r.get('key')} accepted via {r.get('source')}, owed {', '.join(r.get('expects') or [])}"
    if kind == RecordType.INVOKE_START:
        return f"start ({r.get('source')}, {r.get('cause')}) in {r.get('container')}, keys {r.get('keys')}"
    if kind == RecordType.INVOKE_END:
        return f"end: {r.get('outcome')}" + (f" ({r.get('error')})" if r.get("error") else "")
    if kind == RecordType.AWS:
        detail = {k: v for k, v in (r.get("detail") or {}).items() if k != "condition"}
        return f"{r.get('service')}.{r.get('op')} {r.get('key') or r.get('target') or ''} -> {r.get('result')}" + (
            f" {detail}" if detail else "")
    if kind == RecordType.EFFECT:
        return f"{r.get('kind')} {r.get('key')}: {r.get('status')}"
    if kind == RecordType.DELIVERY:
        return f"{r.get('source')}: {r.get('what')} {', '.join(r.get('keys') or [])}"
    if kind == RecordType.SWEEP:
        return f"TTL deleted {r.get('key')}"
    return str(r.get("text", ""))


def _who(r: RecordJson) -> str:
    return r.get("inv") or r.get("actor") or r.get("source") or ""


def history_html(history: Any) -> str:
    records = history.events
    shown = records if len(records) <= MAX_ROWS else records[: MAX_ROWS // 2] + records[-MAX_ROWS // 2:]
    rows = [(r["seq"], f"{r['t']:.3f} s", r["type"], _who(r), describe_record(r)) for r in shown]
    if len(shown) < len(records):
        rows.insert(MAX_ROWS // 2, ("…", "", "", "", f"{len(records) - len(shown)} more records"))
    meta = history.meta
    count = f"{len(records)} record{'' if len(records) == 1 else 's'}"
    title = f"History: {count}" + (f" · {meta['scenario']}" if meta.get("scenario") else "") + (
        f" · seed {meta['seed']}" if "seed" in meta else "")
    return f"<div><b>{_e(title)}</b>{_table(('#', 'time', 'type', 'who', 'what'), rows)}</div>"


def _badge(status: str) -> str:
    colour = VERDICT_COLOURS.get(status, "#444")
    return f'<span style="color:white;background:{colour};padding:1px 8px;border-radius:8px">{_e(status)}</span>'


def _count(n: int, word: str) -> str:
    """"1 finding", "2 findings"; ``word`` may run on ("note on the record": "2 notes on the record")."""
    first, _, rest = word.partition(" ")
    return " ".join(filter(None, [f"{n} {first}{'' if n == 1 else 's'}", rest]))


def verdict_html(verdict: Any) -> str:
    """The badge and a headline that counts the findings that judge the run; the checker's notes on the
    idempotency record (a lock overlap, a stale write) explain and never judge, so they are counted as notes,
    in a table of their own: "valid · 1 finding" over a lock overlap read as a fault in a valid run."""
    judged = [f for f in verdict.findings if not FindingKind(f.kind).note]
    notes = [f for f in verdict.findings if FindingKind(f.kind).note]
    parts = [f"<div>{_badge(verdict.status)} "]
    if not judged:
        parts.append(_e(verdict.explain().split("\n", 1)[0].split(": ", 1)[-1]))
    else:
        parts.append(_count(len(judged), "finding"))
    if notes:
        parts.append(f" · {_count(len(notes), NOTE_WORDS)}")
    for kind, found in (("finding", judged), (NOTE_WORDS, notes)):
        if found:
            rows = [(_e(FindingKind(f.kind).value), _e(f.key), _e(f.text)) for f in found]
            parts.append(_table((kind, "order", "what happened"), rows, raw=True))
    kinds = sorted({k for v in verdict.effects_per_key.values() for k in v})
    if verdict.effects_per_key:
        rows = [(key, *(counts.get(k, "") for k in kinds)) for key, counts in verdict.effects_per_key.items()]
        parts.append("<details><summary>effects per order</summary>" + _table(("order", *kinds), rows) +
                     "</details>")
    parts.append("</div>")
    return "".join(parts)


def result_html(result: Any) -> str:
    report = result.report()
    calls = ", ".join(f"{k} {v}" for k, v in report["dynamodb_calls"].items()) or "none"
    n = len(report["invocations"])
    head = (f"<b>{_e(result.scenario)}</b> · seed {result.seed} · {n} invocation{'' if n == 1 else 's'} · "
            f"DynamoDB calls: {_e(calls)} · {duration(report['virtual_seconds'])} of virtual time")
    return f"<div>{head}<br>{verdict_html(result.verdict)}</div>"


def matrix_html(matrix: Any) -> str:
    rows = [(_e(r.scenario), _e(r.source), _badge(r.verdict), r.extra_effects or "", r.lost or "",
             _e(", ".join(r.causes))) for r in matrix.rows]
    return (f"<div><b>{_e(matrix.summary())}</b>"
            + _table(("scenario", "source", "verdict", "extra effects", "lost", "repeated by"), rows, raw=True)
            + "</div>")


def key_matrix_html(matrix: Any) -> str:
    def cell(text):
        if text is None:
            return '<span style="color:#999">n/a</span>'
        colour = VERDICT_COLOURS[Status.VALID] if text == "holds" else VERDICT_COLOURS[Status.INVALID]
        return f'<span style="color:{colour}">{_e(text)}</span>'

    rows = [(_e(name), _e(source), *(cell(c) for c in cells)) for name, source, cells in matrix.rows]
    return _table(("scenario", "source", *matrix.keys), rows, raw=True)


for _kind, _render in (("history", history_html), ("verdict", verdict_html), ("run", result_html),
                       ("matrix", matrix_html), ("key-matrix", key_matrix_html)):
    register_html(_kind, _render)

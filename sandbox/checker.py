"""The checker: reads a history, gives a verdict in Maelstrom's terms, and explains it.

- ``valid``: every accepted order got each effect it is owed exactly once.
- ``invalid``: some effect happened twice or more (a duplicate), an accepted order never
  got an effect it is owed (lost), or an effect happened for an order nobody accepted.
- ``unknown``: nothing is wrong yet, but the history cannot say: an order is still in
  flight when the run stopped, or an invocation was abandoned while blocked.

It reads only the history, so it judges a live run, a saved JSON file or a hand-built
history the same way.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .history import History

COUNTED = ("done", "indefinite")  # an indefinite effect was performed, only unacknowledged


@dataclass
class Finding:
    kind: str  # "duplicate", "lost", "unexpected", "pending", "abandoned"
    key: str
    effect: str | None
    text: str
    invocations: list[str] = field(default_factory=list)
    window: tuple[float, float] | None = None
    remaining_window: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "key": self.key, "effect": self.effect, "text": self.text,
                "invocations": self.invocations, "window": list(self.window) if self.window else None,
                "remaining_window": self.remaining_window}


@dataclass
class Verdict:
    verdict: str
    findings: list[Finding]
    effects_per_key: dict[str, dict[str, int]]

    @property
    def valid(self) -> bool:
        return self.verdict == "valid"

    @property
    def duplicates(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "duplicate"]

    @property
    def lost(self) -> list[Finding]:
        return [f for f in self.findings if f.kind == "lost"]

    def explain(self) -> str:
        if not self.findings:
            total = sum(sum(v.values()) for v in self.effects_per_key.values())
            return f"valid: {len(self.effects_per_key)} orders, {total} effects, each exactly once."
        lines = [f"{self.verdict}: {len(self.findings)} finding{'s' if len(self.findings) != 1 else ''}"]
        lines += [f"- {f.text}" for f in self.findings]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()

    def _repr_markdown_(self) -> str:
        return "**" + self.explain().replace("\n- ", "**\n\n- ", 1) + ("" if self.findings else "**")


def _fmt(t: float) -> str:
    return f"{t:.1f} s" if t < 120 else f"{t / 60:.1f} min"


def _describe(inv: dict[str, Any] | None, inv_id: str | None) -> str:
    if inv is None:
        return inv_id or "outside any invocation"
    return f"{inv_id} ({inv['source']}, {inv['cause']})"


def _in_remaining_window(history: History, first: dict, invs: dict[str, dict]) -> bool:
    """Did the first effect's invocation claim the key, do the effect, then die before saving?

    That is the window the article admits no claim can close: the work happened, the
    record of it did not, so the retry repeats it.
    """
    inv_id = first.get("inv")
    inv = invs.get(inv_id)
    if inv is None or inv["outcome"] in ("ok", None):
        return False
    table = history.meta.get("table", "idempotency")
    calls = [e for e in history if e["type"] == "aws" and e.get("inv") == inv_id and e.get("target") == table]
    claimed = any(e["op"] in ("PutItem", "UpdateItem") and e["result"] == "ok" and e["seq"] < first["seq"] for e in calls)
    saved = any(e["op"] in ("PutItem", "UpdateItem") and e["result"] == "ok" and e["seq"] > first["seq"]
                and (e.get("detail") or {}).get("status") == "COMPLETED" for e in calls)
    return claimed and not saved


def check(history: History) -> Verdict:
    invs = history.invocations()
    owed: dict[str, set[str]] = defaultdict(set)
    for e in history.of_type("accept"):
        owed[e["key"]].update(e.get("expects") or [])
    effects: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for e in history.of_type("effect"):
        if e["status"] in COUNTED:
            effects[(e["kind"], e["key"])].append(e)

    pending = {k for e in history.of_type("delivery") if e.get("what") == "pending" for k in e.get("keys") or []}
    dead = defaultdict(list)
    for e in history.of_type("delivery"):
        if e.get("what") in ("dead-lettered", "discarded"):
            for k in e.get("keys") or []:
                dead[k].append(e)

    findings: list[Finding] = []
    effects_per_key: dict[str, dict[str, int]] = {}
    kinds_seen = sorted({kind for kind, _ in effects} | {k for v in owed.values() for k in v})
    keys = sorted(set(owed) | {key for _, key in effects}, key=_natural)
    for key in keys:
        effects_per_key[key] = {kind: len(effects.get((kind, key), [])) for kind in kinds_seen
                                if kind in owed.get(key, set()) or (kind, key) in effects}
        for kind in sorted(effects_per_key[key]):
            done = effects.get((kind, key), [])
            if key not in owed or kind not in owed[key]:
                findings.append(Finding("unexpected", key, kind,
                                        f"{key}: {len(done)} {kind} effect(s), but no accepted order owes one",
                                        [e.get("inv") for e in done]))
                continue
            if len(done) > 1:
                who = ", ".join(f"{_describe(invs.get(e.get('inv')), e.get('inv'))} at {_fmt(e['t'])}" for e in done)
                window = (done[0]["t"], done[-1]["t"])
                remaining = _in_remaining_window(history, done[0], invs)
                text = f"{key}: {kind} sent {len(done)} times, by {who}."
                if remaining:
                    first_inv = invs.get(done[0].get("inv"), {})
                    text += (f" Remaining window: {done[0].get('inv')} claimed the key and did the {kind}, then "
                             f"ended with {first_inv.get('outcome')} before saving its result, so the retry "
                             f"repeated it. No claim closes this window; only a downstream idempotency key does.")
                if any(e["status"] == "indefinite" for e in done):
                    text += " (One of them was cut off by a deadline but still reached the provider.)"
                findings.append(Finding("duplicate", key, kind, text, [e.get("inv") for e in done], window, remaining))
            elif not done:
                if key in pending:
                    findings.append(Finding("pending", key, kind,
                                            f"{key}: no {kind} yet, and the order was still in flight when the run stopped"))
                else:
                    where = ""
                    if dead.get(key):
                        d = dead[key][-1]
                        where = f" It ended {d['what']} at {_fmt(d['t'])}" + (
                            f" ({(d.get('detail') or {}).get('reason')})" if (d.get("detail") or {}).get("reason") else "") + "."
                    tried = [i for i, v in invs.items() if key in (v.get("keys") or [])]
                    tried_text = (" Invocations that carried it: " + ", ".join(
                        f"{_describe(invs[i], i)} -> {invs[i]['outcome']}" for i in tried) + ".") if tried else " No invocation ever carried it."
                    findings.append(Finding("lost", key, kind, f"{key}: accepted but no {kind} was ever sent.{where}{tried_text}", tried))
    for inv_id, inv in invs.items():
        if inv["outcome"] == "error" and "blocked outside the sandbox" in (inv.get("error") or ""):
            findings.append(Finding("abandoned", ",".join(inv.get("keys") or []) or inv_id, None,
                                    f"{inv_id} was blocked outside the sandbox, so what it did after that is unknown", [inv_id]))

    if any(f.kind in ("duplicate", "lost", "unexpected") for f in findings):
        verdict = "invalid"
    elif findings:
        verdict = "unknown"
    else:
        verdict = "valid"
    return Verdict(verdict, findings, effects_per_key)


def _natural(key: str):
    head, _, tail = key.rpartition("-")
    return (head, int(tail)) if tail.isdigit() else (key, -1)

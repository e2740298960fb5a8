"""Exercise 01's timelines: runs whose scenario you are asked to name.

    candidates()          # the scenarios to choose from, and what delivers each one's repeat
    mystery("A")          # timeline A, drawn (its scenario's name is not in it)
    mystery("A", text=True)   # the same run, in words, after a table of its invocations

A wrong answer is told where its timeline differs from what the named scenario would show
(``wrong_answer_hint``): the evidence, read from the timeline, never the right name.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, TypedDict

from ..core.history import History
from ..core.records import Accept, AwsCall, DeliveryRecord, EffectRecord
from ..errors import BadInput
from ..vocab import Delivery, EffectStatus, Outcome
from ..vocab import SourceKind as Src
from . import notebooks as nb
from .catalog import EXERCISES_DIR
from .feedback import text_timeline

QUIZ = "01_name_the_source"

#: What delivers each candidate's repeat, in words: what the learner matches the timeline against.
DELIVERS = {
    "sqs-batch-failure": "an SQS batch whose handler fails: every message of it, done ones included, is received "
                         "again when the visibility timeout runs out",
    "sqs-visibility-timeout": "SQS makes a batch visible again while its first receiver still holds it (the "
                              "visibility timeout is shorter than the work): the same messages, received again",
    "sqs-spontaneous-duplicate": "SQS (a standard queue, at least once) hands over a copy of a message that was "
                                 "already handled",
    "producer-resend": "the producer's SendMessage timed out after it took effect; its SDK retry put a second "
                       "message (a new message id) for the same order into the queue",
    "async-retry": "Lambda's async queue retries an event whose invocation failed with an error (same request id, "
                   "a minute or more later)",
    "async-duplicate": "Lambda's async queue delivers one event twice though the first invocation succeeded",
    "timeout-after-effect": "an async invocation runs past its timeout after its effect went out; Lambda retries "
                            "the event (same request id)",
    "sync-sdk-retry": "an SDK client's synchronous Invoke times out while the function still works, and the SDK "
                      "sends the Invoke again",
    "apigw-client-retry": "API Gateway stops waiting at its integration timeout (29 s by default) and answers 504 "
                          "while the function still works; the client sends the request again",
    "stream-batch-retry": "a stream batch (Kinesis, DynamoDB Streams) whose handler fails is retried from its "
                          "first record, done records included",
    "kinesis-producer-resend": "a Kinesis producer's PutRecord timed out after it took effect; its retry wrote the "
                               "order to the stream a second time",
    "eventbridge-producer-resend": "an EventBridge producer's PutEvents timed out after it took effect; its retry "
                                   "published the order a second time",
}

class Signs(TypedDict):
    """What a timeline shows about its first repeated effect, feature by feature (``_feature_text`` says each)."""

    lane: str | None  # the source kind the repeat came through
    first_end: str  # how the first invocation stood at the handover: an Outcome, or "running"
    same_request: bool
    sent_twice: bool
    received_again: bool


class Evidence(Signs):
    """``evidence``: the signs a timeline shows, and where: the order, its two invocations, the seconds between."""

    order: str
    first: str
    repeat: str
    gap: float


#: What a timeline of each candidate shows about its first repeated effect (``evidence``): read from a run of
#: each with the naive handler, and pinned for the quiz's own timelines by tests/test_grade_feedback.py.
SIGNS: dict[str, Signs] = {
    "sqs-batch-failure": {"lane": Src.SQS, "first_end": Outcome.ERROR, "same_request": False, "sent_twice": False,
                          "received_again": True},
    "sqs-visibility-timeout": {"lane": Src.SQS, "first_end": "running", "same_request": False, "sent_twice": False,
                               "received_again": True},
    "sqs-spontaneous-duplicate": {"lane": Src.SQS, "first_end": Outcome.OK, "same_request": False, "sent_twice": False,
                                  "received_again": False},
    "producer-resend": {"lane": Src.SQS, "first_end": Outcome.OK, "same_request": False, "sent_twice": True,
                        "received_again": False},
    "async-retry": {"lane": Src.ASYNC, "first_end": Outcome.ERROR, "same_request": True, "sent_twice": False,
                    "received_again": False},
    "async-duplicate": {"lane": Src.ASYNC, "first_end": Outcome.OK, "same_request": False, "sent_twice": False,
                        "received_again": False},
    "timeout-after-effect": {"lane": Src.ASYNC, "first_end": Outcome.TIMEOUT, "same_request": True, "sent_twice": False,
                             "received_again": False},
    "sync-sdk-retry": {"lane": Src.SYNC, "first_end": "running", "same_request": False, "sent_twice": False,
                       "received_again": False},
    "apigw-client-retry": {"lane": Src.APIGATEWAY, "first_end": "running", "same_request": False,
                           "sent_twice": False, "received_again": False},
    "stream-batch-retry": {"lane": Src.STREAM, "first_end": Outcome.ERROR, "same_request": False, "sent_twice": False,
                           "received_again": False},
    "kinesis-producer-resend": {"lane": Src.STREAM, "first_end": Outcome.OK, "same_request": False, "sent_twice": True,
                                "received_again": False},
    "eventbridge-producer-resend": {"lane": Src.ASYNC, "first_end": Outcome.OK, "same_request": False,
                                    "sent_twice": True, "received_again": False},
}

_LANES = {Src.SQS: "an SQS queue", Src.ASYNC: "Lambda's async queue", Src.SYNC: "a synchronous Invoke from an SDK "
          "client", Src.APIGATEWAY: "API Gateway", Src.STREAM: "a stream's shard"}
_ENDS = {Outcome.ERROR: "had ended with an error", Outcome.TIMEOUT: "had timed out", Outcome.OK: "had succeeded",
         "running": "was still running"}


#: When the source handed the repeat over: what ``first_end`` is read at.
_HANDOVER = "when the source hands the repeat over (for a message received again, when it is received)"


def _feature_text(feature: str, value: Any) -> str:
    """What a timeline with this value of ``feature`` shows, said of its repeat."""
    if feature == "lane":
        return f"the repeat comes through {_LANES.get(value, value)}"
    if feature == "first_end":
        return f"{_HANDOVER}, the first invocation {_ENDS.get(value, value)}"
    if feature == "same_request":
        return "the repeat keeps the first invocation's request id" if value else "the repeat has a new request id"
    if feature == "sent_twice":
        return ("the producer sent the order twice (more sends than orders)" if value
                else "the producer sent each order once")
    return ("the source received the same message again before the repeat (a redelivery mark)" if value
            else "no message was received a second time before the repeat")


def _question(feature: str, seen: Evidence) -> str:
    """Where on the timeline ``feature`` shows, asked of its two invocations: the evidence, never its value (a
    value can name the answer: only one candidate comes through API Gateway)."""
    first, repeat = seen["first"], seen["repeat"]
    return {
        "lane": f"which lane is {repeat} on?",
        "first_end": f"how did {first} stand when the source handed {repeat} over (a message received again is "
                     f"handed over when it is received: the redelivery mark)?",
        "same_request": f"do {first} and {repeat} have the same request id?",
        "sent_twice": "how many sends did the producer make, for how many orders?",
    }.get(feature, f"was any message received a second time (a redelivery mark) before {repeat}?")


def _folder() -> Path:
    here = Path.cwd() / QUIZ
    return here if here.is_dir() else EXERCISES_DIR / QUIZ


def candidate_names() -> list[str]:
    meta = nb.exercise_meta(nb.read(EXERCISES_DIR / f"{QUIZ}.ipynb")) or {}
    return list(meta.get("candidates") or DELIVERS)


def candidates() -> None:
    """Print the scenarios a timeline may come from, each with what delivers its repeat."""
    from tabulate import tabulate

    print(tabulate([(name, DELIVERS.get(name, "")) for name in candidate_names()], tablefmt="plain",
                   disable_numparse=True))


def load(letter: str) -> History:
    path = _folder() / f"{str(letter).upper()}.json"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in _folder().glob("*.json")))
        raise BadInput(f"no timeline {letter!r}; there are: {known}")
    return History.load(path)


def _producer_sends(history: History) -> list[AwsCall]:
    return [e for e in history.records(AwsCall) if e.actor == "producer"]


def evidence(history: History) -> Evidence | None:
    """What a timeline shows about its first repeated effect: the lane, how the first invocation stood when the
    repeat started, whether the repeat kept its request id, whether the producer sent the order twice, and
    whether the source received the same message again first. None when nothing was repeated."""
    invs = history.invocation_records()
    done: dict[str, list[str]] = defaultdict(list)
    for e in history.records(EffectRecord):
        if e.status == EffectStatus.DONE and e.inv:
            done[e.key].append(e.inv)
    repeated = [k for k, v in done.items() if len(v) > 1]
    if not repeated:
        return None
    order = min(repeated, key=lambda k: invs[done[k][1]].t)  # the first repeat on the timeline
    a, b = invs[done[order][0]], invs[done[order][1]]
    sends = _producer_sends(history)
    accepted = history.records(Accept)
    marks = [d.t for d in history.records(DeliveryRecord) if d.what == Delivery.REDELIVERY
             and order in d.keys and a.t <= d.t <= b.t]
    again = bool(marks)
    # How the first stood when the source handed the repeat over: a message received again was handed over when it
    # was received (SQS may do that while its first receiver still works), anything else when the repeat started.
    handover = marks[-1] if marks else b.t
    ended = a.ended_at is not None and a.ended_at <= handover + 1e-9
    return {"lane": a.start.source, "first_end": str(a.outcome) if ended else "running",
            "same_request": a.start.request_id == b.start.request_id, "sent_twice": len(sends) > len(accepted),
            "received_again": again, "order": order, "first": a.id, "repeat": b.id,
            "gap": round(b.t - a.t, 1)}


def wrong_answer_hint(letter: str, given: Any) -> str | None:
    """How timeline ``letter`` differs from what the scenario ``given`` would show, or None if it cannot say."""
    name = str(given).strip().lower()
    if name not in SIGNS:
        return f"{given!r} is not one of the candidates: {', '.join(candidate_names())}"
    try:
        seen = evidence(load(letter))
    except (BadInput, OSError, ValueError):
        return None
    if seen is None:
        return None
    differ = [(f, v) for f, v in SIGNS[name].items() if seen.get(f) != v]
    if not differ:
        return None
    where = (f"look at {seen['order']}'s two emails on timeline {str(letter).upper()}: {seen['first']} did the "
             f"first, {seen['repeat']} the repeat, {seen['gap']} s later")
    told = "; ".join(_feature_text(f, v) for f, v in differ[:2])
    asked = " ".join(_question(f, seen) for f, _ in differ[:2])
    return f"in {name}, {told}. Now {where}. {asked[0].upper()}{asked[1:]}"


def invocation_table(history: History) -> str:
    """Each invocation in one line: lane, start, end, how it ended, request id, the orders it carried."""
    from tabulate import tabulate

    rows = []
    for inv in history.invocation_records().values():
        end = "-" if inv.ended_at is None else f"{inv.ended_at:.1f} s"
        rows.append((inv.id, inv.start.source, f"{inv.t:.1f} s", end, inv.outcome,
                     str(inv.start.request_id)[:8], ", ".join(inv.start.keys)))
    lines = [tabulate(rows, ("inv", "lane", "start", "end", "ended", "request id", "carries"), tablefmt="simple",
                      colalign=("left", "left", "right", "right"), disable_numparse=True)]
    sends = _producer_sends(history)
    if sends:
        orders = len(history.records(Accept))
        times = ", ".join(f"{e.t:.1f} s" for e in sends)
        lines.append(f"the producer: {len(sends)} sends ({sends[0].op} at {times}) for {orders} orders")
    return "\n".join(lines)


def mystery(letter: str, text: bool = False):
    """Timeline ``letter``: a figure (or, with ``text=True``, its invocations and the run in words)."""
    history = load(letter)
    if text:
        print(invocation_table(history))
        print()
        print(text_timeline(history, limit=200))
        return None
    from ..present.timeline import plot_timeline

    return plot_timeline(history, title=f"Timeline {str(letter).upper()}")

"""The verdict composes rules: those every history is judged by, and those of the source kinds its records name.

As in Jepsen and Maelstrom, where each workload brings its own checker: a FIFO queue's order is judged only in
histories of an SQS source, a new source's rule only in histories of its kind, and which rules judge a history
changes no word of a verdict it could reach.
"""
import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_golden import report_text
from test_history_checker import _run, clean_history

from sandbox import History, check, run_scenario
from sandbox.verdict.facts import Facts
from sandbox.verdict.findings import Finding
from sandbox.verdict.judges import Judges, Rule
from sandbox.verdict.rules import JUDGES
from sandbox.verdict.rules.batch_response import BATCH_RESPONSE
from sandbox.verdict.rules.fifo import FIFO_ORDER
from sandbox.vocab import BadBatchResponse, FindingKind, SourceKind

from conftest import example as example_handler

SNAPSHOTS = Path(__file__).parent / "__snapshots__" / "test_golden"
#: Every rule made to judge every history, whatever its sources.
EVERY_RULE_EVERYWHERE = Judges(dataclasses.replace(r, sources=None) for r in JUDGES.rules)


def _fifo_history(source: str) -> History:
    """Two orders of one message group, the second one's email sent before the first one's."""
    h = History({"table": "idempotency"})
    for key in ("o-1", "o-2"):
        h.append("accept", 0, key=key, expects=["email"], source=source, group="g-1")
    end = _run(h, "inv-1", 0.0, source=source, keys=["o-1", "o-2"])
    for t, key in ((0.2, "o-2"), (0.4, "o-1")):
        h.append("effect", t, inv="inv-1", kind="email", key=key, status="done", detail={})
    end(0.5)
    return h


def test_the_fifo_rule_judges_only_histories_of_an_sqs_source():
    fifo = check(_fifo_history(SourceKind.SQS))
    assert fifo.status == "invalid" and [f.kind for f in fifo.findings] == [FindingKind.OUT_OF_ORDER]
    assert FIFO_ORDER in JUDGES.of(Facts(_fifo_history(SourceKind.SQS)).sources)
    # The same records from an async source: no FIFO queue, so the rule does not run, and nothing is out of order.
    async_history = _fifo_history(SourceKind.ASYNC)
    assert FIFO_ORDER not in JUDGES.of(Facts(async_history).sources)
    assert check(async_history).status == "valid" and check(async_history).findings == []
    assert [f.kind for f in check(async_history, EVERY_RULE_EVERYWHERE).findings] == [FindingKind.OUT_OF_ORDER]


def _pigeon_rule(facts: Facts) -> list[Finding]:
    return [Finding(FindingKind.LOST, key, None, f"{key}: a pigeon ate it") for key in sorted(facts.owed)]


PIGEON = Rule("carrier pigeons", 50, _pigeon_rule, frozenset({"carrier-pigeon"}))


def test_a_rule_for_a_new_source_kind_judges_only_histories_of_that_kind():
    judges = JUDGES.adding(PIGEON)
    assert judges.by_source()["carrier-pigeon"] == ["carrier pigeons"]
    sqs = clean_history()
    assert check(sqs, judges) == check(sqs) and check(sqs).status == "valid"
    pigeon = History({"table": "idempotency"}, [{**e, "source": "carrier-pigeon"} if e["type"] == "accept" else e
                                                for e in clean_history()])
    verdict = check(pigeon, judges)
    assert verdict.status == "invalid" and [f.text for f in verdict.findings] == ["o-1: a pigeon ate it",
                                                                                   "o-2: a pigeon ate it"]
    assert check(pigeon).status == "valid"


def test_the_registry_names_each_sources_rules():
    batch = ["partial batch responses"]
    assert JUDGES.by_source() == {SourceKind.DDB_STREAM: batch, SourceKind.KAFKA: batch,
                                  SourceKind.SQS: ["FIFO order", *batch], SourceKind.STREAM: batch}
    assert [r.name for r in JUDGES.of(frozenset({SourceKind.SQS, SourceKind.KAFKA}))] == [
        "exactly once", "abandoned invocations", "FIFO order", "partial batch responses",
        "notes on the idempotency record"]
    assert JUDGES.adding(BATCH_RESPONSE).rules == JUDGES.rules  # a rule listed twice judges once
    with pytest.raises(ValueError, match="share a place and a name"):
        JUDGES.adding(dataclasses.replace(FIFO_ORDER, judge=_pigeon_rule))


# -- random histories: the order rules are listed in, and the rules a history's sources leave out, change nothing --
BATCH_SOURCES = sorted(BATCH_RESPONSE.sources or ())
step = st.fixed_dictionaries({
    "type": st.sampled_from(["accept", "accept", "effect", "effect", "effect", "pending", "bad batch", "claim",
                             "delete"]),
    "key": st.sampled_from(["o-1", "o-2", "o-3"]),
    "kind": st.sampled_from(["email", "charge"]),
    "source": st.sampled_from([SourceKind.SQS, SourceKind.ASYNC, SourceKind.KAFKA, SourceKind.SYNC]),
    "group": st.sampled_from(["g-1", "g-1", "g-2", None]),  # mostly one group, so that one is often out of order
    "inv": st.sampled_from(["inv-1", "inv-2", "inv-3"]),
    "dt": st.floats(0, 100, allow_nan=False),
})


def _history(steps) -> History:
    """A history as the world writes them: only an SQS FIFO producer names a group, and only a batch source
    (SQS, streams, Kafka) fails a batch for a bad partial batch response."""
    h, t = History({"table": "idempotency", "epoch": 0}), 0.0
    invs = {}
    for s in steps:
        t += s["dt"]
        if s["inv"] not in invs:
            invs[s["inv"]] = _run(h, s["inv"], t, source=s["source"], keys=[s["key"]])
        if s["type"] == "accept":
            group = {"group": s["group"]} if s["source"] == SourceKind.SQS and s["group"] else {}
            h.append("accept", t, key=s["key"], expects=[s["kind"]], source=s["source"], **group)
        elif s["type"] == "effect":
            h.append("effect", t, inv=s["inv"], kind=s["kind"], key=s["key"], status="done", detail={})
        elif s["type"] == "pending":
            h.append("delivery", t, source=s["source"], what="pending", keys=[s["key"]], inv=None, detail={})
        elif s["type"] == "bad batch":
            h.append("delivery", t, source=BATCH_SOURCES[len(s["key"] + s["inv"]) % len(BATCH_SOURCES)],
                     what="batch failed", keys=[s["key"]], inv=s["inv"],
                     detail={"badResponse": BadBatchResponse.NO_IDENTIFIER})
        else:
            status = {"status": "IN_PROGRESS"} if s["type"] == "claim" else {}
            h.append("aws", t, inv=s["inv"], actor=s["inv"], service="dynamodb", key=s["key"], result="ok",
                     op="PutItem" if s["type"] == "claim" else "DeleteItem", target="idempotency", detail=status)
    for end in invs.values():
        end(t + 1)
    return h


#: A FIFO group handled out of order (random steps rarely line four up so).
OUT_OF_ORDER = [{"type": t, "key": k, "kind": "email", "source": SourceKind.SQS, "group": "g-1", "inv": "inv-1",
                 "dt": 1.0} for t, k in (("accept", "o-1"), ("accept", "o-2"), ("effect", "o-2"), ("effect", "o-1"))]


@settings(max_examples=80, deadline=None)
@given(st.lists(step, min_size=4, max_size=30), st.permutations(JUDGES.rules))
@example(OUT_OF_ORDER, JUDGES.rules[::-1])
def test_a_verdict_is_the_same_whatever_the_order_rules_are_listed_in_and_loses_nothing(steps, rules):
    h = _history(steps)
    verdict = check(h)
    if steps == OUT_OF_ORDER:
        assert [f.kind for f in verdict.findings] == [FindingKind.OUT_OF_ORDER]
    assert check(h, Judges(rules)) == verdict
    assert check(h, EVERY_RULE_EVERYWHERE) == verdict


# -- the world's own runs: each source names a kind its rules judge -------------------------------------------------
BAD_RESPONSE = """from sandbox import orders_in, send_confirmation_email


def handler(event, context):
    for order in orders_in(event):
        send_confirmation_email(order)
    return {"batchItemFailures": [{"itemIdentifier": "no record of this batch"}]}
"""


@pytest.mark.slow
@pytest.mark.parametrize("scenario", ["sqs-batch-failure", "stream-batch-retry", "ddb-stream-ttl-remove",
                                      "kafka-partial-batch"])
def test_every_batch_source_fails_a_batch_under_a_kind_its_rule_judges(scenario, tmp_path):
    handler = tmp_path / "bad_response.py"
    handler.write_text(BAD_RESPONSE)
    history = run_scenario(scenario, f"{handler}:handler", seed=0).history
    verdict = check(history)
    assert FindingKind.BAD_BATCH_RESPONSE in {f.kind for f in verdict.findings}
    assert check(history, EVERY_RULE_EVERYWHERE) == verdict


def test_a_fifo_queue_out_of_order_is_judged_under_its_kind():
    history = run_scenario("sqs-fifo-window", example_handler("partial_batch.py"),
                           settings={"fail_order": 1, "resend_order": 0}).history
    verdict = check(history)
    assert [f.kind for f in verdict.findings] == [FindingKind.OUT_OF_ORDER]
    assert check(history, EVERY_RULE_EVERYWHERE) == verdict


# -- every golden run's history, judged again: the report's verdict, word for word --------------------------------
def _records(text: str) -> History:
    meta, *lines = text.splitlines()
    events = []
    for line in lines:
        seq, t, kind, rest = line.split(None, 3)
        events.append({"seq": int(seq), "t": json.loads(t.removeprefix("t=")), "type": kind, **json.loads(rest)})
    return History(json.loads(meta.removeprefix("meta ")), events)


def _blocks(report: str) -> dict[str, str]:
    """A report's text (test_golden.report_text) by field: the explanation, then a block per field."""
    explanation, _, rest = report.partition("\n\n")
    blocks, name = {"explanation": explanation}, ""
    for line in rest.splitlines():
        if line.startswith("  "):
            blocks[name] += "\n" + line
        else:
            name = line.split(":")[0]
            blocks[name] = line
    return blocks


VERDICT_FIELDS = ("verdict", "explanation", "effects_per_key", "duplicates", "lost", "findings")


@pytest.mark.parametrize("path", sorted(SNAPSHOTS.glob("test_run*[[]history[]].txt")), ids=lambda p: p.name[9:-15])
def test_every_golden_history_judged_again_gives_its_reports_verdict(path):
    history = _records(path.read_text())
    verdict = check(history)
    mine = {"verdict": verdict.status, "explanation": verdict.explain(), "effects_per_key": verdict.effects_per_key,
            "duplicates": [f.to_dict() for f in verdict.duplicates], "lost": [f.to_dict() for f in verdict.lost],
            "findings": [f.to_dict() for f in verdict.findings]}
    stored = _blocks(Path(str(path).replace("[history]", "[report]")).read_text())
    assert {k: _blocks(report_text(mine))[k] for k in VERDICT_FIELDS} == {k: stored[k] for k in VERDICT_FIELDS}
    assert check(history, EVERY_RULE_EVERYWHERE) == verdict

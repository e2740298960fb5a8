"""The duplicate matrix: one handler against every scenario, as a table, JSON and a page of timelines."""
import json
import re

import pytest
from PIL import Image

from sandbox import SCENARIOS, run_scenario
from sandbox.analysis.matrix import duplicate_matrix, row_of
from sandbox.cli import main

from conftest import example

NAIVE, IDEMPOTENT = example("naive_email.py"), example("idempotent.py")


def test_the_naive_handler_breaks_in_every_duplicate_source_and_the_rows_say_how(capsys):
    assert main(["matrix", "--handler", NAIVE]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["scenario", "source", "verdict", "extra", "effects", "lost", "repeated", "by"]
    rows = {line.split()[0]: line for line in lines[2:2 + len(SCENARIOS)]}
    assert list(rows) == list(SCENARIOS)
    for name, sc in SCENARIOS.items():
        if sc.kind == "duplicate source":
            assert " invalid " in rows[name], name
    assert re.split(r"\s{2,}", rows["sync-sdk-retry"]) == ["sync-sdk-retry", "sync invoke (SDK)", "invalid", "2", "0",
                                                          "SDK retry"]
    assert rows["sqs-dlq-redrive"].endswith("DLQ redrive") and "SQS FIFO" in rows["sqs-fifo-window"]
    assert rows["no-fault"].split()[3:] == ["valid", "0", "0", "-"]


def test_each_row_counts_the_effects_the_checker_counted():
    m = duplicate_matrix(NAIVE, scenarios=["sqs-visibility-timeout", "async-retry", "no-fault"])
    by_name = {r.scenario: r for r in m.rows}
    for name, r in by_name.items():
        counts = r.result.verdict.effects_per_key
        assert r.extra_effects == sum(max(0, n - 1) for effects in counts.values() for n in effects.values()), name
    assert by_name["sqs-visibility-timeout"].extra_effects == 3  # o-1, o-2, o-3 each emailed twice
    assert by_name["async-retry"].causes == ("retry 1",)
    assert by_name["no-fault"].extra_effects == 0 and by_name["no-fault"].verdict == "valid"
    assert m.status == "invalid" and "2 of 3 scenarios broke it" in m.summary()


def test_the_idempotent_example_is_valid_in_the_whole_matrix(capsys):
    assert main(["matrix", "--handler", IDEMPOTENT, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verdict"] == "valid" and len(report["rows"]) == len(SCENARIOS)
    assert {r["verdict"] for r in report["rows"]} == {"valid"}
    assert all(r["extra_effects"] == 0 and r["lost"] == 0 and r["causes"] == [] for r in report["rows"])


def test_a_row_is_what_one_run_of_the_scenario_gives():
    result = run_scenario("apigw-client-retry", NAIVE, seed=3)
    row = row_of(result)
    assert (row.source, row.verdict, row.extra_effects, row.causes) == ("API Gateway", "invalid", 2,
                                                                         ("client retry",))
    assert duplicate_matrix(NAIVE, seed=3, scenarios=["apigw-client-retry"]).rows == [row]


def test_the_plot_is_one_page_with_a_timeline_per_source(tmp_path, capsys):
    page = tmp_path / "matrix.png"
    code = main(["matrix", "--handler", NAIVE, "--plot", str(page),
                 "--scenario", "sqs-batch-failure", "--scenario", "sqs-visibility-timeout",
                 "--scenario", "async-retry", "--scenario", "no-fault"])
    assert code == 1 and "page of timelines saved" in capsys.readouterr().err
    m = duplicate_matrix(NAIVE, scenarios=["sqs-batch-failure", "sqs-visibility-timeout", "async-retry",
                                           "no-fault"])
    # the control has no panel; SQS shows the scenario that hurt most (three extra emails, not two)
    assert [(r.source, r.scenario) for r in m.showcase()] == [("SQS", "sqs-visibility-timeout"),
                                                             ("async invoke", "async-retry")]
    with Image.open(page) as im:
        width, height = im.size
    assert width == 1980 and 400 < height < 1400  # two panels side by side, one row


@pytest.mark.parametrize("argv, message", [
    (["matrix"], "the following arguments are required: --handler"),
    (["matrix", "--handler", "examples/nope.py:handler"], "nope.py"),
    (["matrix", "--handler", NAIVE, "--scenario", "sqs-batch-failur"], "did you mean 'sqs-batch-failure'"),
    (["matrix", "--handler", NAIVE, "--plot", "page.gif"], "--plot writes png, svg or pdf"),
])
def test_bad_matrix_arguments_are_one_line_and_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


# -- what to key on ------------------------------------------------------------------------------------
def test_each_delivery_id_survives_some_repeats_and_not_others():
    from sandbox.analysis.matrix import key_matrix

    m = key_matrix(["sync-sdk-retry", "async-retry", "sqs-batch-failure", "producer-resend",
                    "kinesis-producer-resend", "eventbridge-producer-resend", "kafka-batch-retry",
                    "kafka-producer-resend", "kafka-topic-destination", "crash-mid-work"])
    cells = {name: dict(zip(m.keys, row)) for name, _, row in m.rows}
    assert "crash-mid-work" not in cells  # run_once's own trials are no source of duplicates
    assert cells["sqs-batch-failure"]["by_message_id"] == "holds"  # a redelivery keeps the MessageId
    assert cells["producer-resend"]["by_message_id"] == "breaks: producer re-send"
    assert cells["async-retry"]["by_request_id"] == "holds"  # Lambda's async retry keeps aws_request_id
    assert cells["sync-sdk-retry"]["by_request_id"] == "breaks: SDK retry"
    assert cells["kinesis-producer-resend"]["by_stream_event_id"] == "breaks: producer re-send"
    assert cells["eventbridge-producer-resend"]["by_event_id"] == "breaks: producer re-send"
    assert cells["kafka-batch-retry"]["by_kafka_offset"] == "holds"  # a batch retry hands over the same records
    assert cells["kafka-producer-resend"]["by_kafka_offset"] == "breaks: producer re-send"
    # the dead-letter topic's records are new records: another topic, new offsets
    assert cells["kafka-topic-destination"]["by_kafka_offset"] == "breaks: dead-letter topic"
    assert cells["sync-sdk-retry"]["by_message_id"] is None  # no SQS message to read it from
    assert m.holds_everywhere() == ["by_order_id", "by_payload_hash"]
    assert "n/a" in m.table() and "<table" in m._repr_html_()


def test_a_key_no_scenario_could_read_is_not_said_to_hold_everywhere():
    from sandbox.analysis.matrix import key_matrix

    m = key_matrix(["async-retry"], keys=["by_order_id", "by_kafka_offset"])
    assert m.holds_everywhere() == ["by_order_id"]  # by_kafka_offset applies to no scenario here: untested


def test_an_unknown_key_is_named():
    from sandbox import BadInput
    from sandbox.analysis.matrix import key_matrix

    with pytest.raises(BadInput, match="unknown key 'by_colour'; keys: by_order_id"):
        key_matrix(["no-fault"], keys=["by_colour"])

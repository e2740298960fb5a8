"""The words people read: counts in the right number, suggestions for typos."""
import pytest

from sandbox import SCENARIOS, History, run_scenario
from sandbox.analysis.matrix import Matrix, MatrixRow
from sandbox.cli import main
from sandbox.errors import BadInput
from sandbox.present.display import history_html, result_html
from sandbox.verdict.checker import Finding, Verdict

from conftest import example


@pytest.mark.parametrize("effects, words", [
    ({}, "0 orders, 0 effects"),
    ({"o-1": {"email": 1}}, "1 order, 1 effect"),
    ({"o-1": {"email": 1, "charge": 1}}, "1 order, 2 effects"),
    ({"o-1": {"email": 1}, "o-2": {"email": 1}}, "2 orders, 2 effects"),
])
def test_a_valid_verdict_counts_orders_and_effects_in_the_right_number(effects, words):
    assert Verdict("valid", [], effects).explain() == f"valid: {words}, each exactly once."


def test_a_mistyped_setting_name_gets_the_closest_one():
    with pytest.raises(BadInput, match=r"no setting 'batchsize'; did you mean 'batch_size'\? its settings are: "):
        SCENARIOS["sqs-batch-failure"].resolve({"batchsize": 5})


def test_a_setting_name_like_nothing_gets_the_list_only():
    with pytest.raises(BadInput) as caught:
        SCENARIOS["no-fault"].resolve({"zzz": 1})
    assert "did you mean" not in str(caught.value) and "its settings are: " in str(caught.value)


def _finding(key: str) -> Finding:
    return Finding("duplicate", key, "email", f"{key}: email sent 2 times, by inv-1 and inv-2.")


@pytest.mark.parametrize("keys, words", [([], "0 findings"), (["o-1"], "1 finding"), (["o-1", "o-2"], "2 findings")])
def test_a_verdict_repr_counts_its_findings_in_the_right_number(keys, words):
    assert repr(Verdict("invalid", [_finding(k) for k in keys], {})) == f"<Verdict invalid: {words}>"


def test_a_history_of_one_record_says_record():
    history = History(events=[{"seq": 0, "t": 0.0, "type": "accept", "key": "o-1", "expects": ["email"],
                               "source": "direct"}])
    assert repr(history).startswith("History(1 record, ") and "History: 1 record<" in history_html(history)


def test_a_run_of_one_invocation_says_invocation():
    result = run_scenario("no-fault", example("naive_email.py"), settings={"orders": 1})
    assert " · 1 invocation · " in result_html(result)


def _row(scenario: str, verdict: str) -> MatrixRow:
    return MatrixRow(scenario, "direct invoke", verdict, 1 if verdict == "invalid" else 0, 0, (), result=None)


def test_a_matrix_of_one_scenario_names_it_instead_of_counting():
    valid = Matrix("h.py:handler", 1, [_row("no-fault", "valid")])
    assert valid.summary() == "h.py:handler: valid in no-fault (seed 1)."
    assert Matrix("h.py:handler", 1, [_row("async-retry", "invalid")]).summary() == (
        "h.py:handler: async-retry broke it (seed 1): 1 extra effect, 0 lost orders.")


def test_an_exploration_capped_at_one_schedule_says_schedule(capsys):
    main(["run", "concurrent-claims", "--handler", example("read_then_write.py"), "--policy", "exhaustive",
          "--max-schedules", "1"])
    assert capsys.readouterr().out.splitlines()[0].endswith("up to 1 schedule")


def test_one_throttled_try_is_a_try_in_the_history_and_on_the_timeline():
    from sandbox.present.timeline import plot_timeline

    result = run_scenario("async-late-retry", example("naive_email.py"),
                          settings={"throttled_from": 0.0, "throttled_for": 0.5})  # over before the second try
    whys = [r["detail"]["why"] for r in result.history.events if (r.get("detail") or {}).get("tries") == 1]
    assert whys and all("throttled: 1 try answered 429 " in why for why in whys)
    texts = [t.get_text() for ax in plot_timeline(result.history).axes for t in ax.texts]
    assert "throttled (429): 1 try over 1 s" in texts


def test_a_campaign_of_one_strategy_one_column_and_one_run_says_so():
    from sandbox.analysis.campaign import run_campaign, scoreboard_text

    text = scoreboard_text(run_campaign(["naive"], ["no-fault"], seeds=1, others_seeds=1))
    assert text.startswith("Campaign: 1 strategy x 1 scenario setting (every strategy: seed 0); 1 run in ")
    assert "  naive: valid in 1 of 1 column within the assumptions" in text.splitlines()


def test_a_verdicts_headline_counts_notes_apart_from_findings():
    """Lesson 10's try-it (lock 10 s, function timeout 20 s): the verdict read "valid · 1 finding", where the one
    "finding" was a note on the idempotency record (a lock overlap), which never judges. A note is counted as a
    note, in a table of its own."""
    from sandbox.present.display import verdict_html
    from sandbox.present.widgets import split_verdict

    result = run_scenario("lock-shorter-than-work", example("article.py"), settings={
        "lock_seconds": 10, "slow_email_seconds": 30, "function_timeout": 20, "duplicate_delay": 12})
    assert result.status == "valid" and [str(n.kind) for n in result.verdict.notes] == ["lock overlap"]
    headline, rest = split_verdict(result_html(result))
    assert "finding" not in headline and "1 note on the idempotency record" in headline
    assert "each exactly once" in headline
    assert ">note on the idempotency record<" in rest and ">finding<" not in rest
    invalid = run_scenario("lock-shorter-than-work", example("article.py"), settings={
        "lock_seconds": 10, "slow_email_seconds": 30, "function_timeout": 60, "duplicate_delay": 12})
    assert [str(n.kind) for n in invalid.verdict.notes] == ["lock overlap", "stale write"]
    html = verdict_html(invalid.verdict)
    assert "1 finding ·" in html and "2 notes on the idempotency record" in html and "3 findings" not in html

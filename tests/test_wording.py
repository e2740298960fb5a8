"""The words people read: counts in the right number, suggestions for typos, first sentences."""
import pytest

from sandbox import SCENARIOS
from sandbox.checker import Verdict
from sandbox.cli import first_sentence
from sandbox.errors import BadInput


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


@pytest.mark.parametrize("text, first", [
    ("One thing happens. Then another.", "One thing happens."),
    ("A 5 s wait (the default). 30 s later it retries.", "A 5 s wait (the default)."),
    ("No full stop at all", "No full stop at all"),
    ("Spread\n   over lines. Next.", "Spread over lines."),
])
def test_first_sentence(text, first):
    assert first_sentence(text) == first

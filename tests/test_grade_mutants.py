"""The mutation catalogue (tests/mutants/): known-wrong answers, each losing the item that tests its flaw,
with feedback that names the flaw. Each mutant runs in this process against the tests of that one item
(the grader's judge, on the recorder's copy of each history), which keeps the catalogue quick."""
import ast
import shutil

import pytest

from sandbox.grading import catalog
from sandbox.grading.catalog import Exercise
from sandbox.grading.exercise_check import run_tests
from sandbox.grading.render import failure_text
from sandbox.grading.scoring import items

from conftest import ROOT

#: One of the course's long suites: `make test-course` runs it (CI too), `make test` leaves it out.
pytestmark = pytest.mark.course

MUTANTS = ROOT / "tests" / "mutants"

#: mutant file -> (the item it must lose, the hint that names its flaw)
CATALOGUE = {
    "01_timeout_for_async_retry": ("B", "wrong-answer"),
    "01_spontaneous_for_producer_resend": ("C", "wrong-answer"),
    "02_read_then_write": ("one-winner", "read-then-write"),
    "02_effect_before_claim": ("one-winner", "effect-before-claim"),
    "02_swallows_conditional_check": ("one-winner", "claim-ignored"),
    "02_module_level_cache": ("one-winner", "no-claim"),
    "02_condition_on_absent_attribute": ("one-winner", "condition-on-absent-attribute"),
    "02_swallows_every_client_error": ("dynamodb-errors", "broad-except"),
    "03_no_delete_on_failure": ("failure-retried", "no-release"),
    "03_no_result_stored": ("replay", "no-replay"),
    "03_eventually_consistent_read": ("replay", "stale-read"),
    "03_swallows_still_in_progress": ("in-progress", "swallowed-in-progress"),
    "03_deletes_claim_after_success": ("one-winner", "deleted-after-success"),
    "04_no_expiry_in_condition": ("ttl-lag", "trusts-ttl"),
    "04_lock_shorter_than_work": ("lock-outlasts-work", "lock-overlap"),
    "04_fixed_lock_hidden_by_no_expiry": ("lock-outlasts-work", "lock-too-short"),
    "04_retention_too_short": ("retention", "retention-too-short"),
    "04_short_retention_claim_ignores_expiry": ("retention", "retention-too-short"),
    "04_fixed_lock_three_hour_retention": ("retention", "retention-too-short"),
    # the blind wrong answers of exercises 01-04 (written from the README and the lessons only)
    "01_visibility_timeout_for_batch_failure": ("A", "wrong-answer"),
    "01_duplicate_for_retry_and_spontaneous": ("B", "wrong-answer"),
    "01_timeout_after_effect_for_async_retry": ("B", "wrong-answer"),
    "01_spontaneous_duplicate_for_resend": ("C", "wrong-answer"),
    "01_sdk_retry_for_apigw_retry": ("D", "wrong-answer"),
    "01_descriptions_not_names": ("A", "wrong-answer"),
    "01_spontaneous_for_async_duplicate": ("E", "wrong-answer"),
    "01_kinesis_resend_for_stream_retry": ("F", "wrong-answer"),
    "02_except_exception_skips": ("dynamodb-errors", "broad-except"),
    "02_condition_on_order_id": ("one-winner", "condition-on-absent-attribute"),
    "02_email_then_claim": ("one-winner", "effect-before-claim"),
    "02_keyed_on_request_id": ("async-duplicate", "key-per-delivery"),
    "02_module_level_set_blind_put": ("one-winner", "unconditional-claim"),
    "02_put_then_read_back_owner": ("one-winner", "unconditional-claim"),
    "02_consistent_read_then_put": ("one-winner", "read-then-write"),
    "02_misspelt_error_code": ("async-duplicate", "refusal-raised"),
    "03_client_error_taken_as_claimed": ("in-progress", "refusal-as-in-progress"),
    "03_deletes_claim_in_finally": ("one-winner", "deleted-after-success"),
    "03_default_read_on_refusal": ("replay", "stale-read"),
    "03_in_progress_returns_none": ("in-progress", "swallowed-in-progress"),
    "03_keeps_claim_when_work_fails": ("failure-retried", "no-release"),
    "03_reclaims_unless_completed": ("one-winner", "claim-overwrites-in-progress"),
    "03_status_only_no_result": ("replay", "no-replay"),
    "03_swallows_work_error": ("failure-retried", "swallowed-error"),
    "03_two_updates_status_first": ("replay", "save-in-two-writes"),
    "04_except_exception_in_claim": ("ttl-lag", "refusal-as-in-progress"),
    "04_takes_key_when_expiry_is_now": ("lock-outlasts-work", "expiry-boundary"),
    "04_fixed_30_s_lock": ("lock-outlasts-work", "lock-too-short"),
    "04_fixed_900_s_lock": ("crash-recovery", "lock-too-long"),
    "04_keeps_result_as_long_as_lock": ("retention", "retention-too-short"),
    "04_keeps_result_one_hour": ("retention", "retention-too-short"),
    "04_lock_rounded_down": ("lock-outlasts-work", "lock-rounded-down"),
    "04_lock_in_milliseconds": ("crash-recovery", "lock-too-long"),
    "04_lock_from_env_var": ("lock-outlasts-work", "lock-overlap"),
    "04_trusts_ttl_blind": ("crash-recovery", "trusts-ttl"),
    "05_keyed_on_message_id": ("sqs-resend", "key-per-delivery"),
    "05_keyed_on_aws_request_id": ("sdk-retry", "key-per-delivery"),
    "05_keyed_on_email_and_amount": ("distinct-orders", "key-collision"),
    "06_no_409_in_progress": ("conflict", "no-409"),
    "06_no_payload_check": ("mismatch", "no-422"),
    "06_payload_whole_event": ("replay", "payload-per-request"),
    "06_case_sensitive_key_header": ("replay", "key-header-case"),
    "06_retry_after_not_a_string": ("conflict", "retry-after"),
    "06_constant_retry_after": ("conflict", "retry-after"),
    "07_whole_batch_fails": ("batch-failure", "batch-not-partial"),
    "07_claim_for_whole_batch": ("batch-failure", "claim-per-batch"),
    "07_keyed_on_message_id": ("resend", "key-per-delivery"),
    "07_swallows_in_progress_record": ("in-progress", "swallowed-in-progress"),
    "07_names_order_in_batch_failures": ("batch-failure", "wrong-identifier"),
    "07_raises_on_poison": ("poison", "batch-not-partial"),
    "07_reports_every_record_on_failure": ("batch-failure", "handled-records-reported"),
    "07_receipt_handle_as_identifier": ("in-progress", "wrong-identifier"),
    "07_run_once_without_context": ("timed-out-record", "lock-too-long"),
    "08_unfenced_release": ("fenced-release", "stale-write"),
    "08_no_downstream_key": ("downstream-key", "downstream-key"),
    "08_unfenced_save": ("fenced-save", "stale-write"),
    "08_unfenced_delete_own_lock": ("fenced-release", "stale-write"),
    "08_unfenced_lock_from_remaining_time": ("fenced-release", "stale-write"),
    "08_charge_key_per_attempt": ("downstream-key", "charge-key-per-attempt"),
    "08_refused_save_raises": ("fenced-save", "refused-save-raised"),
    "08_save_typo_hidden_by_broad_except": ("replay", "save-refused-own-claim"),
    "08_broad_except_around_save": ("save-errors", "broad-except"),
    # written blind, from the README and the lessons only (issue 30): exercises 05-08
    "05_blind_apigw_request_id": ("http-retry", "key-per-delivery"),
    "05_blind_aws_request_id": ("sdk-retry", "key-per-delivery"),
    "05_blind_customer_email": ("distinct-orders", "key-collision"),
    "05_blind_delivery_ids_first": ("sqs-resend", "key-per-delivery"),
    "05_blind_hash_whole_record_body": ("eventbridge-resend", "key-per-delivery"),
    "05_blind_hash_without_order_id": ("distinct-orders", "key-collision"),
    "05_blind_order_id_plus_day": ("dlq-redrive", "key-per-delivery"),
    "05_blind_sqs_message_id": ("sqs-resend", "key-per-delivery"),
    "06_blind_broad_except_422": ("work-fails", "failure-as-4xx"),
    "06_blind_case_sensitive_header": ("replay", "key-header-case"),
    "06_blind_conflict_retry_after_fixed": ("conflict", "retry-after"),
    "06_blind_conflict_without_retry_after": ("conflict", "retry-after"),
    "06_blind_key_on_order_id_not_header": ("mismatch", "key-not-header"),
    "06_blind_missing_key_falls_back": ("missing-key", "no-400"),
    "06_blind_no_payload_fingerprint": ("mismatch", "no-422"),
    "06_blind_replay_as_200": ("replay", "no-replay"),
    "06_blind_retry_after_int": ("conflict", "retry-after"),
    "07_blind_break_at_first_failure": ("batch-failure", "records-skipped"),
    "07_blind_in_progress_is_success": ("in-progress", "swallowed-in-progress"),
    "07_blind_key_on_message_id": ("resend", "key-per-delivery"),
    "07_blind_order_id_as_identifier": ("batch-failure", "wrong-identifier"),
    "07_blind_parse_whole_batch_first": ("poison", "always-fails"),
    "07_blind_raise_if_any_failed": ("batch-failure", "batch-not-partial"),
    "07_blind_string_identifiers": ("batch-failure", "wrong-identifier"),
    "07_blind_swallow_in_work": ("batch-failure", "swallowed-error"),
    "08_blind_charge_key_minute_bucket": ("downstream-key", "charge-key-per-attempt"),
    "08_blind_charge_key_uuid": ("downstream-key", "charge-key-per-attempt"),
    "08_blind_fence_attribute_exists": ("fenced-release", "stale-write"),
    "08_blind_fence_on_lock_validity": ("fenced-release", "stale-write"),
    "08_blind_owner_token_per_container": ("fenced-release", "shared-owner-token"),
    "08_blind_save_raises_when_refused": ("fenced-save", "refused-save-raised"),
    "08_blind_unfenced_release": ("fenced-release", "stale-write"),
    "08_blind_unfenced_save": ("fenced-save", "stale-write"),
    # exercise 09, Powertools: one wrong answer per pitfall (solutions/09_powertools_handler.tries.md)
    "09_key_on_message_id": ("key-per-order", "powertools-key-per-delivery"),
    "09_raise_on_no_key_left_off": ("no-key", "no-key-runs-unprotected"),
    "09_no_payload_validation": ("payload-changed", "no-payload-validation"),
    "09_catches_idempotency_errors": ("payload-changed", "swallowed-validation-error"),
    "09_default_expiry": ("retention", "powertools-expiry-too-short"),
    "09_local_cache_three_hours": ("retention", "powertools-expiry-too-short"),
    "09_no_lambda_context": ("crash-recovery", "powertools-no-lambda-context"),
    "09_idempotent_whole_handler": ("batch-failure", "powertools-whole-batch"),
    # exercise 09's blind wrong answers (tests/blind09/submissions/): first hints wrong, or blaming another item
    "09_blind_key_whole_order": ("payload-changed", "key-holds-payload"),
    "09_blind_sqs_raises_whole_batch": ("batch-failure", "batch-not-partial"),
    "09_blind_in_progress_skipped": ("in-progress", "powertools-swallowed-in-progress"),
    "09_blind_failure_stored_as_result": ("batch-failure", "failure-saved-as-result"),
    "09_blind_email_outside": ("key-per-order", "powertools-work-outside"),
}


def test_the_catalogue_lists_every_mutant_and_holds_at_least_twelve():
    files = sorted(p.stem for p in MUTANTS.glob("[0-9][0-9]_*.py"))
    assert files == sorted(CATALOGUE) and len(files) >= 12
    for name in files:
        doc = ast.get_docstring(ast.parse((MUTANTS / f"{name}.py").read_text()))
        assert doc and doc.startswith(f"Mutant of solutions/{name[:2]}_"), name


def _one_item(ex: Exercise, item: str) -> Exercise:
    return Exercise(ex.id, ex.slug, ex.title, tuple(t for t in ex.tests if t.item == item), ex.function, ex.next,
                    ex.preview, ex.kit)


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_each_mutant_loses_its_item_with_feedback_naming_the_flaw(tmp_path, name):
    item, hint = CATALOGUE[name]
    ex = catalog.grading_catalogue()[name[:2]]
    answer = tmp_path / f"{ex.name}.py"
    shutil.copyfile(MUTANTS / f"{name}.py", answer)
    shutil.copyfile(ROOT / "exercises" / catalog.KIT, tmp_path / catalog.KIT)
    only = _one_item(ex, item)
    assert only.tests, f"{ex.name} has no item {item!r}"
    [result] = items(only, run_tests(only, answer, f"exercises/{ex.name}.py", [90210, 90211]))
    assert not result.passed and result.score == 0, f"{name} kept {item}"
    assert hint in result.hint_codes, (name, result.hint_codes)
    failed = result.failure.failure
    [named] = [h for h in failed.hints if h.code == hint]
    text = "\n".join(failure_text(result))
    assert named.text in text
    if ex.function == "answers":  # a quiz: the hint names the evidence that does not fit, never the answer
        answer = [t.answer for t in ex.tests if t.item == item and t.answer][0]
        if "is not one of the candidates:" in named.text:  # a name off the list: the hint lists every candidate
            return
        assert answer not in named.text and "Now look at" in named.text, named.text
        return
    assert failed.replay and failed.replay in text and f"exercises/{ex.name}.py:handler" in failed.replay
    assert failed.timeline and "timeline:" in text


#: mutant file -> an item it must keep: each item tests its own point, whatever else the answer gets wrong
KEEPS = {
    "04_no_expiry_in_condition": "retention",  # a claim that ignores expiry neither saves nor sinks a retention
    "08_unfenced_save": "fenced-release",  # a fenced delete passes, whatever the save does
    "08_refused_save_raises": "fenced-release",  # its delete is fenced and quiet: only the save is wrong
    "09_raise_on_no_key_left_off": "payload-changed",  # the key's option says nothing of payloads
    "09_local_cache_three_hours": "other-environments",  # the cache sits in front of the table, which still decides
    # keyed on orderId: a batch failed whole, or a failure replayed from the table, is batch handling, not the key
    "09_blind_sqs_raises_whole_batch": "key-per-order",
    "09_blind_failure_stored_as_result": "key-per-order",
}


@pytest.mark.parametrize("name", sorted(KEEPS))
def test_a_mutant_keeps_the_items_that_do_not_test_its_flaw(tmp_path, name):
    ex = catalog.grading_catalogue()[name[:2]]
    answer = tmp_path / f"{ex.name}.py"
    shutil.copyfile(MUTANTS / f"{name}.py", answer)
    only = _one_item(ex, KEEPS[name])
    [result] = items(only, run_tests(only, answer, f"exercises/{ex.name}.py", [90210]))
    assert result.passed, (name, result.hint_codes)


#: exercise 09's blind answer -> (the item it loses, words its hints must say, words none of them may say)
WORDING = {
    # the failure is stored as the result and replayed: no loop stopped at a refusal, and each failure was reported
    "09_blind_failure_stored_as_result": ("batch-failure", "COMPLETED after the failure",
                                          ("the loop stopped", "neither raised nor reported")),
    # Powertools raises its own class, which is no subclass of the course kit's
    "09_blind_in_progress_skipped": ("in-progress", "IdempotencyAlreadyInProgressError", ("StillInProgressError",)),
    # the key changes with the amount, not with the delivery
    "09_blind_key_whole_order": ("payload-changed", 'hashes the whole order ("@")',
                                 ("new on every delivery", "messageId", "request id")),
    # the email is sent outside the decorated function: no conditional put of the answer's own to catch
    "09_blind_email_outside": ("key-per-order", "outside the function under @idempotent_function",
                               ("ConditionalCheckFailedException", "claim the key first")),
}


@pytest.mark.parametrize("name", sorted(WORDING))
def test_a_blind_answers_hints_name_its_own_flaw_in_powertools_terms(tmp_path, name):
    item, said, unsaid = WORDING[name]
    ex = catalog.grading_catalogue()["09"]
    answer = tmp_path / f"{ex.name}.py"
    shutil.copyfile(MUTANTS / f"{name}.py", answer)
    only = _one_item(ex, item)
    [result] = items(only, run_tests(only, answer, f"exercises/{ex.name}.py", [90210, 90211]))
    hints = [h.text for t in result.tests if t.failure for h in t.failure.hints]
    assert hints and any(said in h for h in hints), hints
    for words in unsaid:
        assert not any(words in h for h in hints), (words, hints)


def test_a_refused_claim_that_is_ignored_is_not_called_module_level_state(tmp_path):
    """The loser did try a conditional put: the hint is the ignored refusal, never 'claimed nothing'."""
    ex = catalog.grading_catalogue()["02"]
    answer = tmp_path / f"{ex.name}.py"
    shutil.copyfile(MUTANTS / "02_swallows_conditional_check.py", answer)
    only = _one_item(ex, "one-winner")
    [result] = items(only, run_tests(only, answer, f"exercises/{ex.name}.py", [90210]))
    assert "claim-ignored" in result.hint_codes and "no-claim" not in result.hint_codes


def test_a_claim_left_behind_is_named_by_its_own_order_not_by_one_that_completed(tmp_path):
    """Exercise 03's failed work leaves o-2's claim behind; o-1 completed. The hint names o-2's claim."""
    ex = catalog.grading_catalogue()["03"]
    answer = tmp_path / f"{ex.name}.py"
    shutil.copyfile(MUTANTS / "03_no_delete_on_failure.py", answer)
    shutil.copyfile(ROOT / "exercises" / catalog.KIT, tmp_path / catalog.KIT)
    only = _one_item(ex, "failure-retried")
    [result] = items(only, run_tests(only, answer, f"exercises/{ex.name}.py", [90210]))
    [hint] = [h for h in result.failure.failure.hints if h.code == "no-release"]
    assert "claimed order-confirmation#o-2," in hint.text and "o-1" not in hint.text
    # what the retries did, as they did it: each raised StillInProgressError (none returned having skipped it)
    assert "raised StillInProgressError" in hint.text and "skipped the work" not in hint.text


def test_a_lock_the_handler_sized_too_short_is_not_sent_after_fencing_tokens(tmp_path):
    """Exercise 04 asks for the lock, not for fencing: its hint names the lock, not the stale write that follows."""
    ex = catalog.grading_catalogue()["04"]
    answer = tmp_path / f"{ex.name}.py"
    shutil.copyfile(MUTANTS / "04_lock_shorter_than_work.py", answer)
    shutil.copyfile(ROOT / "exercises" / catalog.KIT, tmp_path / catalog.KIT)
    only = _one_item(ex, "lock-outlasts-work")
    [result] = items(only, run_tests(only, answer, f"exercises/{ex.name}.py", [90210]))
    assert "lock-overlap" in result.hint_codes and "stale-write" not in result.hint_codes, result.hint_codes


@pytest.mark.parametrize("name", ["08_unfenced_save", "08_unfenced_delete_own_lock"])
def test_an_unfenced_write_fails_the_stale_owner_drill_whatever_size_the_lock(name):
    """The drill ends the first attempts' locks itself, so a lock sized to the remaining time does not hide an
    unfenced save or delete; the hint says which of the two went through."""
    from sandbox.grading.drills import judge as judge_drill
    from sandbox.grading.drills import run_drill

    history = run_drill("stale-owner", f"{MUTANTS / name}.py:handler", seed=0)
    wrong = judge_drill("stale-owner", history)
    assert wrong and "stale write" in wrong
    assert ("overwrote" if "save" in name else "deleted") in wrong


def test_the_gateway_records_a_claim_condition_that_tests_an_attribute_its_item_never_has():
    """What the condition-on-absent-attribute hint reads: a put's record names the attributes its condition tests
    (attribute_exists / attribute_not_exists, through ExpressionAttributeNames) that its own item lacks."""
    from sandbox import run_scenario
    from sandbox.aws.dynamo import tested_but_absent

    def puts(handler):
        history = run_scenario("async-duplicate", handler, seed=0).history
        return [e["detail"] for e in history.of_type("aws") if e["op"] == "PutItem"]

    wrong = puts(f"{MUTANTS / '02_condition_on_absent_attribute.py'}:handler")
    assert wrong and all(d.get("conditionTestsAbsent") == ["orderId"] for d in wrong)
    right = puts(f"{ROOT / 'solutions' / '02_claim_the_key.py'}:handler")
    assert right and not any("conditionTestsAbsent" in d for d in right)
    item = {"pk": {"S": "k"}, "status": {"S": "IN_PROGRESS"}}
    assert tested_but_absent({"ConditionExpression": "attribute_not_exists(#k) OR expiresAt < :now",
                              "ExpressionAttributeNames": {"#k": "pk"}, "Item": item}) == []
    assert tested_but_absent({"ConditionExpression": "attribute_not_exists(#k) AND attribute_exists(owner.id)",
                              "ExpressionAttributeNames": {"#k": "orderId"}, "Item": item}) == ["orderId", "owner"]


def test_a_stale_drill_says_it_ended_the_lock_itself_and_does_not_blame_the_handlers_lock():
    """The drill ends the first attempt's lock from outside (a 60 s lock, ended at 1 s): its lock overlap note
    says so, and never that the handler's lock was too short; a lock that runs out by itself still gets that rule."""
    from sandbox import run_scenario
    from sandbox.grading.drills import run_drill
    from sandbox.verdict.checker import check

    history = run_drill("stale-save", f"{ROOT / 'solutions' / '08_fencing_and_downstream_keys.py'}:handler", seed=0)
    [overlap] = [f for f in check(history).findings if f.kind == "lock overlap"]
    assert "caused on purpose by the stale-save drill" in overlap.text
    assert "at 1.0 s the stale-save drill set the lock's end to the past" in overlap.text
    assert "must outlast" not in overlap.text
    imposed = run_scenario("lock-shorter-than-work", f"{ROOT / 'examples' / 'idempotent.py'}:handler", seed=0)
    notes = [f.text for f in imposed.verdict.findings if f.kind == "lock overlap"]
    assert notes and all("A lock must outlast the work it guards" in t and "drill" not in t for t in notes)


def test_the_quiz_signs_match_its_own_timelines_and_tell_every_two_candidates_apart():
    from sandbox.grading import quiz

    ex = catalog.grading_catalogue()["01"]
    for t in ex.tests:
        if t.answer:
            seen = quiz.evidence(quiz.load(t.question))
            assert {k: seen[k] for k in quiz.SIGNS[t.answer]} == quiz.SIGNS[t.answer], t.question
    signs = [tuple(sorted(v.items())) for v in quiz.SIGNS.values()]
    assert len(set(signs)) == len(signs) and set(quiz.SIGNS) == set(quiz.candidate_names())

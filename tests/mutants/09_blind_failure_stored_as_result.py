"""Mutant of solutions/09_powertools_handler.py, a blind wrong answer written by a tester from the
exercise's text only (the tester's w14_failure_stored_as_result; kept only here, as
written below this docstring).
Misconception: never let an exception escape the decorator: return a status the handler acts on.
Wrong: the failure is the function's result, so Powertools saves it COMPLETED and replays it to every retry:
the order is never done again and ends in the dead-letter queue.
"""
import os

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig, idempotent_function

from sandbox import charge_card, orders_in, send_confirmation_email

# The course's idempotency table: partition key pk, TTL on expiresAt (Powertools' own defaults are id and expiration).
persistence = DynamoDBPersistenceLayer(table_name=os.environ["IDEMPOTENCY_TABLE"], key_attr="pk",
                                       expiry_attr="expiresAt")


def fulfil(order):
    """The work: charge card orders (the charge carries its own idempotency key), then email."""
    if order.get("payment") == "card":
        charge_card(order, idempotency_key=f"charge#{order['orderId']}")
    return send_confirmation_email(order)


# Write `config`, your IdempotencyConfig, and `fulfil_once(order)`: fulfil under @idempotent_function, with the
# persistence layer above. Your handler calls fulfil_once(order=...) once for each order.
config = IdempotencyConfig(event_key_jmespath="orderId", payload_validation_jmespath="@",
                           raise_on_no_idempotency_key=True, expires_after_seconds=24 * 60 * 60)


@idempotent_function(data_keyword_argument="order", persistence_store=persistence, config=config)
def fulfil_once(order):
    # never let an exception escape the decorator: return a status the handler can act on
    try:
        return {"ok": True, "result": fulfil(order)}
    except Exception as err:
        return {"ok": False, "error": str(err)}


def handler(event, context):
    """An async event: each order once, and raise if one fails. An SQS batch: each record on its own, and the
    failed ones in batchItemFailures."""

    config.register_lambda_context(context)
    if "Records" in event:
        failures = []
        for record in event["Records"]:
            for order in orders_in({"Records": [record]}):
                outcome = fulfil_once(order=order)
                if not outcome["ok"]:
                    failures.append({"itemIdentifier": record["messageId"]})
        return {"batchItemFailures": failures}
    for order in orders_in(event):
        outcome = fulfil_once(order=order)
        if not outcome["ok"]:
            raise RuntimeError(outcome["error"])
    return {"status": "done"}

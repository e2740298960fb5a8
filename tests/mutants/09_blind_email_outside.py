"""Mutant of solutions/09_powertools_handler.py, a blind wrong answer written by a tester from the
exercise's text only (the tester's w15_email_outside; kept only here, as
written below this docstring).
Misconception: only the charge costs money: keep the idempotent part small and send the email after it.
Wrong: the email is outside the function under @idempotent_function, so every delivery sends it again; the
hint must say so, not the course kit's advice about ConditionalCheckFailedException.
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
    # Only the charge costs money; keep the idempotent part small and send the email once it is paid.
    if order.get("payment") == "card":
        return charge_card(order, idempotency_key=f"charge#{order['orderId']}")
    return {"charged": False}


def handler(event, context):
    """An async event: each order once, and raise if one fails. An SQS batch: each record on its own, and the
    failed ones in batchItemFailures."""

    config.register_lambda_context(context)
    if "Records" in event:
        failures = []
        for record in event["Records"]:
            try:
                for order in orders_in({"Records": [record]}):
                    fulfil_once(order=order)
                    send_confirmation_email(order)
            except Exception:
                failures.append({"itemIdentifier": record["messageId"]})
        return {"batchItemFailures": failures}
    for order in orders_in(event):
        fulfil_once(order=order)
        send_confirmation_email(order)
    return {"status": "done"}

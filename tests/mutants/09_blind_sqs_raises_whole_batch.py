"""Mutant of solutions/09_powertools_handler.py, a blind wrong answer written by a tester from the
exercise's text only (the tester's w12_sqs_raises_whole_batch; kept only here, as
written below this docstring).
Misconception: each order is idempotent, so an SQS batch may fail whole: the orders already done are replayed.
Wrong: the batch comes back whole (and, dead-lettered, is redriven whole); its key is right, so it must keep
key-per-order and lose batch-failure.
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
    return fulfil(order)


def handler(event, context):
    """An async event: each order once, and raise if one fails. An SQS batch: each record on its own, and the
    failed ones in batchItemFailures."""

    # Each order is idempotent, so if anything fails just raise: SQS redelivers the batch and the orders
    # already done are replayed from the table, not done again.
    config.register_lambda_context(context)
    results = [fulfil_once(order=order) for order in orders_in(event)]
    if "Records" in event:
        return {"batchItemFailures": []}
    return {"processed": len(results)}

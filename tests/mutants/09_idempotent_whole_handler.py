"""Mutant of solutions/09_powertools_handler.py, a wrong answer written on purpose (by the exercise's author, who knew
the tests) from a misconception a learner brings.
Misconception: @idempotent on the handler is the simplest: key it on the bodies of the batch (or the event's detail).
Wrong: the key covers a whole SQS batch: when one record fails, Powertools deletes the record, the batch comes back
whole, and the orders already emailed are emailed again.
"""
import os

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig, idempotent

from sandbox import charge_card, orders_in, send_confirmation_email

# The course's idempotency table: partition key pk, TTL on expiresAt (Powertools' own defaults are id and expiration).
persistence = DynamoDBPersistenceLayer(table_name=os.environ["IDEMPOTENCY_TABLE"], key_attr="pk",
                                       expiry_attr="expiresAt")


def fulfil(order):
    """The work: charge card orders (the charge carries its own idempotency key), then email."""
    if order.get("payment") == "card":
        charge_card(order, idempotency_key=f"charge#{order['orderId']}")
    return send_confirmation_email(order)


config = IdempotencyConfig(
    event_key_jmespath="Records[*].body || detail",  # what the event carries, not its ids
    raise_on_no_idempotency_key=True,
    expires_after_seconds=6 * 60 * 60,
)


@idempotent(persistence_store=persistence, config=config)
def handler(event, context):
    """Every order in the event, under one record for the whole event."""
    return [fulfil(order) for order in orders_in(event)]

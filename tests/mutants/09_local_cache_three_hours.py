"""Mutant of solutions/09_powertools_handler.py, a wrong answer written on purpose (by the exercise's author, who knew
the tests) from a misconception a learner brings.
Misconception: lesson 13's late retry came two hours later, so three hours is plenty; and the local cache spares
the table.
Wrong: Lambda keeps an async event up to 6 hours: a retry after three hours finds the record expired, in the table
and in the cache.
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


config = IdempotencyConfig(
    event_key_jmespath="orderId",  # the order, never the delivery: a re-send or a redrive keeps it
    raise_on_no_idempotency_key=True,  # an order without one fails, rather than running unprotected
    payload_validation_jmespath="@",  # the same orderId with another order is refused, not replayed
    expires_after_seconds=3 * 60 * 60,  # the late retry came two hours later
    use_local_cache=True,  # duplicates in a warm environment skip DynamoDB
)


@idempotent_function(data_keyword_argument="order", persistence_store=persistence, config=config)
def fulfil_once(order):
    return fulfil(order)


def handler(event, context):
    """An async event: each order once, and raise if one fails. An SQS batch: each record on its own, and the
    failed ones in batchItemFailures."""
    config.register_lambda_context(context)  # an IN_PROGRESS record ends with this invocation
    if "Records" not in event:
        return [fulfil_once(order=order) for order in orders_in(event)]
    failures = []
    for record in event["Records"]:
        try:
            for order in orders_in({"Records": [record]}):
                fulfil_once(order=order)
        except Exception:  # failed, refused or in progress elsewhere: this record comes back, the rest do not
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}

"""Mutant of solutions/09_powertools_handler.py, a wrong answer written on purpose (by the exercise's author, who knew
the tests) from a misconception a learner brings.
Misconception: each message and each event has its own id, so key on it: messageId for SQS, id for EventBridge.
Wrong: a producer's re-send and a DLQ redrive bring a new MessageId (and a re-sent event a new id): the order is
done twice.
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
    event_key_jmespath="messageId || id",  # the id SQS or EventBridge gives each message
    raise_on_no_idempotency_key=True,  # an order without one fails, rather than running unprotected
    payload_validation_jmespath="@",  # the same orderId with another order is refused, not replayed
    expires_after_seconds=6 * 60 * 60,  # as long as Lambda may still retry an async event
)


@idempotent_function(data_keyword_argument="message", persistence_store=persistence, config=config)
def handle_message(message):
    return [fulfil(order) for order in orders_in(message)]


def handler(event, context):
    """An async event: each order once, and raise if one fails. An SQS batch: each record on its own, and the
    failed ones in batchItemFailures."""
    config.register_lambda_context(context)  # an IN_PROGRESS record ends with this invocation
    if "Records" not in event:
        return handle_message(message=event)
    failures = []
    for record in event["Records"]:
        try:
            handle_message(message={"Records": [record], "messageId": record["messageId"]})
        except Exception:  # failed, refused or in progress elsewhere: this record comes back, the rest do not
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}

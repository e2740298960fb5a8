"""Powertools for AWS Lambda's idempotency utility, on the sandbox's table: a correct handler.

Its key is the function's name, module and qualified name plus a hash of the order, so the
module must be named as Lambda names it (after the file) in every container.
"""
import os

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer, IdempotencyConfig, idempotent_function

from sandbox import orders_in, send_confirmation_email

persistence = DynamoDBPersistenceLayer(table_name=os.environ["IDEMPOTENCY_TABLE"], key_attr="pk",
                                       expiry_attr="expiresAt")
config = IdempotencyConfig()


@idempotent_function(data_keyword_argument="order", persistence_store=persistence, config=config)
def confirm(order):
    return send_confirmation_email(order)


def handler(event, context):
    config.register_lambda_context(context)
    return [confirm(order=order) for order in orders_in(event)]

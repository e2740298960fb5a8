"""The local AWS: every request's one way in (the gateway), moto's and botocore's internals (the adapter),
DynamoDB's wire format, replicas and TTL sweeper.
"""

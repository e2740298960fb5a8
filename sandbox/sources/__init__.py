"""Delivery sources: the pollers and queues that turn AWS events into Lambda invocations."""

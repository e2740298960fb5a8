"""Imports a module that is not installed."""
import requests_that_do_not_exist  # noqa: F401


def handler(event, context):
    return {}

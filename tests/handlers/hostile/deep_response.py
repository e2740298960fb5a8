"""Returns a response whose JSON, as the runtime client posts it, nests a hundred thousand deep."""
from sandbox.runtime.environment import guest

_post = guest.ChannelRuntimeClient.post_invocation_result


def _deep(self, invoke_id, result_data, content_type="application/json", *rest):
    return _post(self, invoke_id, b"[" * 100_000 + b"]" * 100_000, "application/json", *rest)


guest.ChannelRuntimeClient.post_invocation_result = _deep


def handler(event, context):
    return {"statusCode": 200}

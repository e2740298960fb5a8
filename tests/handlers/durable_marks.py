"""A durable handler that prints where it is: outside its steps, in each step attempt, after its wait.

tests/test_durable.py runs it under AWS's testing SDK's local runner and in a sandbox world, and compares the
two: the same marks in the same order (code outside steps on every invocation, a step's second attempt after
its first failed, nothing of a completed step on replay).
"""
from aws_durable_execution_sdk_python import DurableContext, StepContext, durable_execution
from aws_durable_execution_sdk_python.config import Duration, JitterStrategy, StepConfig
from aws_durable_execution_sdk_python.retries import RetryStrategyConfig, create_retry_strategy

RETRY = StepConfig(retry_strategy=create_retry_strategy(RetryStrategyConfig(
    max_attempts=3, initial_delay=Duration.from_seconds(1), jitter_strategy=JitterStrategy.NONE)))


def flaky(step: StepContext) -> str:
    print(f"mark: flaky attempt {step.attempt}")
    if step.attempt == 1:
        raise RuntimeError("the first attempt fails")
    return "done"


@durable_execution
def handler(event, context: DurableContext):
    print("mark: outside")
    first = context.step(lambda _: print("mark: first step") or "first", name="first")
    flaky_result = context.step(flaky, name="flaky", config=RETRY)
    context.wait(Duration.from_seconds(2))
    print("mark: after wait")
    return {"first": first, "flaky": flaky_result, "orderId": event.get("orderId")}

"""Step Functions: a state machine's Task state invokes the function, and its ``Retry`` runs it again.

A ``Task`` state whose resource is the optimized Lambda integration,
``arn:aws:states:::lambda:invoke``, calls Lambda's Invoke API and, by default, invokes the
function synchronously (``InvocationType`` RequestResponse): the Task waits for the function's
result (https://docs.aws.amazon.com/step-functions/latest/dg/connect-lambda.html). What this
model keeps from AWS (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html):

- "By default, when a state reports an error, Step Functions causes the execution to fail
  entirely." A ``Retry`` field changes that: it holds *retriers*, and a retrier whose
  ``ErrorEquals`` names the error runs the state again. For a Lambda task that means invoking
  the function again, with the same input: a new invocation with a new request id, which
  repeats whatever the failed attempt had already done (an email sent).
- A retrier's fields and their defaults: ``IntervalSeconds`` (seconds before the first retry,
  1 by default), ``MaxAttempts`` (retries, not counting the first attempt, 3 by default; 0
  never retries), ``BackoffRate`` (the multiplier of the interval at each retry, 2.0 by
  default, at least 1.0), ``MaxDelaySeconds`` (the most any interval grows to; unset, no
  limit) and ``JitterStrategy`` (``FULL``: each interval is drawn between 0 and its computed
  value; ``NONE``, the default: no jitter). Retry n (1, 2, ...) waits
  ``min(IntervalSeconds * BackoffRate ** (n - 1), MaxDelaySeconds)`` seconds after the error,
  drawn from 0 to that with ``FULL`` jitter (here from the world's seeded ``random``).
- Error names: ``States.ALL`` matches any error; ``States.TaskFailed`` any error but
  ``States.Timeout``; ``States.Timeout`` is a Task that ran longer than its ``TimeoutSeconds``
  (https://docs.aws.amazon.com/step-functions/latest/dg/state-task.html: unset, 99999999).
  A function error is named by the ``errorType`` the function reported (a Python handler
  that raises ``EmailProviderError`` fails the Task with ``EmailProviderError``); unhandled
  errors, function timeouts and crashes included, are ``Lambda.Unknown``
  (https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html).
- What AWS recommends retrying for a Lambda task is Lambda's own transient service errors
  (``Lambda.ServiceException``, ``Lambda.AWSLambdaException``, ``Lambda.SdkClientException``,
  ``Lambda.ClientExecutionTimeoutException``, ``LAMBDA_SERVICE_ERRORS``), which the sandbox
  never raises. A retrier that names only those does not retry the function's own error; the
  scenario's ``States.ALL``, a common catch-all, does.
- When the Task times out, Step Functions stops waiting; nothing stops the function, which
  runs on to its end or its own timeout, and a retry starts beside it (as behind API Gateway).
- When no retrier matches, or the matching one has used up its ``MaxAttempts``, the execution
  fails (no ``Catch`` here) and nothing runs its orders again: an order its attempts never
  finished is lost. That is recorded as ``execution failed``, with the error and why.
- A Standard workflow runs for at most a year
  (https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html): an execution whose
  next retry would start later fails then, with ``States.Timeout``.

Each Task attempt is in the history as an ``aws`` record (service ``states``, op
``lambda:invoke``, the execution's task as actor), written when the Task stopped waiting: its
``detail`` holds the attempt, ``retryCount`` (``$$.State.RetryCount``), the invocation it
started, when it was sent, and the error it failed with. The execution's input reaches the
function whole (``"Payload.$": "$"``): here an EventBridge ``OrderPlaced`` event, as when a
rule starts the state machine.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Required, TypedDict

from ..errors import BadInput
from ..events import orders_in
from ..runtime.functions import ACCOUNT, function_error_payload
from ..settings import Config, param
from ..vocab import AWS_OK, Cause, Delivery, Outcome, SourceKind
from .base import Source

if TYPE_CHECKING:
    from ..core.faults import CrashPlan
    from ..runtime.functions import Invocation, LambdaFunction
    from ..world import Sandbox

DOC_ERRORS = "https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html"
DOC_LAMBDA_ERRORS = "https://docs.aws.amazon.com/step-functions/latest/dg/bp-lambda-serviceexception.html"
DOC_LAMBDA = "https://docs.aws.amazon.com/step-functions/latest/dg/connect-lambda.html"
DOC_TASK = "https://docs.aws.amazon.com/step-functions/latest/dg/state-task.html"
DOC_QUOTAS = "https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html"

#: The history's words for a Task attempt: the states service, calling the optimized Lambda integration.
SERVICE, OP = "states", "lambda:invoke"
RESOURCE = "arn:aws:states:::lambda:invoke"
STATE_MACHINE, TASK_STATE = "orders-workflow", "SendConfirmations"
STATES_ALL, STATES_TASK_FAILED, STATES_TIMEOUT = "States.ALL", "States.TaskFailed", "States.Timeout"
LAMBDA_UNKNOWN = "Lambda.Unknown"
#: The retrier AWS recommends for a Lambda task: Lambda's transient service errors (bp-lambda-serviceexception.html).
LAMBDA_SERVICE_ERRORS = ("Lambda.ClientExecutionTimeoutException", "Lambda.ServiceException",
                         "Lambda.AWSLambdaException", "Lambda.SdkClientException")
JITTER_STRATEGIES = ("NONE", "FULL")
#: Limits of the ASL fields (the most the sandbox takes is lower for MaxAttempts and BackoffRate).
MAX_INTERVAL, MAX_DELAY, MAX_TIMEOUT = 99999999, 31622400, 99999999
#: A Standard workflow's longest execution: one year (service-quotas.html).
MAX_EXECUTION_SECONDS = 365 * 86400.0
#: Step Functions' execution statuses (DescribeExecution's words).
RUNNING, SUCCEEDED, FAILED = "RUNNING", "SUCCEEDED", "FAILED"



class Retrier(TypedDict, total=False):
    """A Task's retrier in the Amazon States Language
    (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-error-handling.html)."""

    ErrorEquals: Required[list[str]]
    IntervalSeconds: float
    MaxAttempts: int
    BackoffRate: float
    MaxDelaySeconds: float
    JitterStrategy: str


class TaskState(TypedDict, total=False):
    """A Task state (https://docs.aws.amazon.com/step-functions/latest/dg/state-task.html): the sandbox writes one."""

    Type: Required[str]
    Resource: Required[str]
    Parameters: dict[str, str]  # "FunctionName" and "Payload.$": a path, hence no Python name
    OutputPath: str
    Retry: list[Retrier]
    End: bool
    TimeoutSeconds: float


class StateMachine(TypedDict):
    """A state machine's definition (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-amazon-states-language.html)."""

    Comment: str
    StartAt: str
    States: dict[str, TaskState]


class TaskDetail(TypedDict, total=False):
    """The history's detail of one run of the Task: its attempt, invocation, execution, and the error it failed with."""

    attempt: int
    retryCount: int
    invocation: str
    sent: float
    execution: str
    state: str
    timeout_seconds: float
    error: str
    cause: str | None

@dataclass(frozen=True)
class TaskRetryConfig(Config):
    """The Task state's one retrier, and its TimeoutSeconds, with Step Functions' defaults and meanings."""

    error_equals: str = param(
        STATES_ALL, "ErrorEquals: the error names this retrier retries, comma-separated. States.ALL (here) matches "
        "every error; States.TaskFailed every one but States.Timeout; a function error is named by its errorType "
        "(EmailProviderError), a function timeout or crash is Lambda.Unknown. AWS recommends retrying Lambda's "
        "service errors (" + ",".join(LAMBDA_SERVICE_ERRORS) + "), which would not retry the function's own error",
        DOC_ERRORS, aws="ErrorEquals")
    interval_seconds: int = param(
        1, "IntervalSeconds: seconds before the first retry (1 by default)", DOC_ERRORS, 1, MAX_INTERVAL,
        aws="IntervalSeconds")
    max_attempts: int = param(
        3, "MaxAttempts: how many retries after the first attempt (3 by default; 0: never retry). AWS takes up to "
        "99999999; the sandbox stops at 100", DOC_ERRORS, 0, 100, aws="MaxAttempts")
    backoff_rate: float = param(
        2.0, "BackoffRate: the multiplier of the interval at each retry (2.0 by default, at least 1.0); the sandbox "
        "stops at 100", DOC_ERRORS, 1.0, 100.0, aws="BackoffRate")
    max_delay_seconds: int = param(
        0, "MaxDelaySeconds: the most seconds an interval grows to (0: not set, so no limit; AWS takes 1 to "
        "31622400)", DOC_ERRORS, 0, MAX_DELAY, aws="MaxDelaySeconds")
    jitter_strategy: str = param(
        "NONE", "JitterStrategy: FULL draws each interval between 0 and its computed value; NONE (the default) "
        "waits the computed value", DOC_ERRORS, choices=JITTER_STRATEGIES, aws="JitterStrategy")
    timeout_seconds: int = param(
        0, "TimeoutSeconds of the Task: past it the Task fails with States.Timeout while the function runs on "
        "(0: not set, AWS's 99999999)", DOC_TASK, 0, MAX_TIMEOUT, aws="TimeoutSeconds")

    def check(self) -> None:
        names = self.errors
        if not names or any(not n or " " in n for n in names):
            raise BadInput(f"setting error_equals takes error names separated by commas (States.ALL, "
                           f"States.TaskFailed, Lambda.Unknown, EmailProviderError...), got {self.error_equals!r}")
        if STATES_ALL in names and len(names) > 1:
            raise BadInput(f"States.ALL must appear alone in ErrorEquals ({DOC_ERRORS}), got {self.error_equals!r}")

    @property
    def errors(self) -> tuple[str, ...]:
        """ErrorEquals as a tuple of error names."""
        return tuple(n.strip() for n in self.error_equals.split(","))

    def matches(self, error: str) -> bool:
        """Does the retrier's ErrorEquals name ``error``?"""
        names = self.errors
        if STATES_ALL in names or error in names:
            return True
        return STATES_TASK_FAILED in names and error != STATES_TIMEOUT

    def backoff(self, retry: int) -> float:
        """Seconds before retry number ``retry`` (1, 2, ...), before any jitter."""
        delay = self.interval_seconds * float(self.backoff_rate) ** (retry - 1)
        return min(delay, float(self.max_delay_seconds)) if self.max_delay_seconds else delay

    def retrier(self) -> Retrier:
        """The retrier as it stands in the state machine's definition (fields left at their defaults omitted)."""
        out: Retrier = {"ErrorEquals": list(self.errors), "IntervalSeconds": self.interval_seconds,
                               "MaxAttempts": self.max_attempts, "BackoffRate": self.backoff_rate}
        if self.max_delay_seconds:
            out["MaxDelaySeconds"] = self.max_delay_seconds
        if self.jitter_strategy != "NONE":
            out["JitterStrategy"] = self.jitter_strategy
        return out

    def definition(self, function_arn: str) -> StateMachine:
        """The state machine, in the Amazon States Language: one Task that invokes the function with Retry."""
        task: TaskState = {"Type": "Task", "Resource": RESOURCE,
                                "Parameters": {"FunctionName": function_arn, "Payload.$": "$"},
                                "OutputPath": "$.Payload", "Retry": [self.retrier()], "End": True}
        if self.timeout_seconds:
            task["TimeoutSeconds"] = self.timeout_seconds
        return {"Comment": "Send the confirmation of every order in the input", "StartAt": TASK_STATE,
                "States": {TASK_STATE: task}}

    def describe(self) -> str:
        """One line for the history's notes."""
        timeout = f"TimeoutSeconds {self.timeout_seconds}" if self.timeout_seconds else "no TimeoutSeconds"
        return (f"Step Functions Task {TASK_STATE} ({RESOURCE}, synchronous), {timeout}; Retry: "
                f"{self.retrier()}")


@dataclass
class TaskAttempt:
    """One run of the Task: one invocation of the function."""

    retry_count: int  # $$.State.RetryCount: 0 for the first attempt
    invocation: "Invocation" = field(repr=False)
    sent: float
    ended: float | None = None
    error: str | None = None  # the error the Task failed with; None: it succeeded
    cause: str | None = None

    @property
    def number(self) -> int:
        return self.retry_count + 1


@dataclass
class Execution:
    """One execution of the state machine, and its Task's attempts."""

    name: str
    arn: str
    input: Any
    keys: list[str]
    started: float
    crash: "CrashPlan | None" = None  # applied to the first attempt only
    attempts: list[TaskAttempt] = field(default_factory=list)
    status: str = RUNNING
    error: str | None = None
    task: Any = field(default=None, repr=False)  # the scheduler task that runs it


class StepFunctionsSource(Source):
    """A state machine whose one Task invokes the function synchronously, retrying as ``config`` says."""

    function: LambdaFunction  # it invokes one

    kind = SourceKind.STEPFUNCTIONS

    def __init__(self, world: "Sandbox", function: "LambdaFunction", config: TaskRetryConfig | None = None, *,
                 state_machine: str = STATE_MACHINE, **settings: Any):
        super().__init__(world, function)
        self.config = config or TaskRetryConfig(**settings)
        self.state_machine = state_machine
        self.executions: list[Execution] = []
        self._scheduled = 0

    @property
    def arn(self) -> str:
        return f"arn:aws:states:{self.world.region}:{ACCOUNT}:stateMachine:{self.state_machine}"

    def definition(self) -> StateMachine:
        """The state machine's definition (Amazon States Language), naming this source's function."""
        return self.config.definition(self.function.config.arn)

    def start_execution(self, event: Any, *, at: float = 0.0, accept: bool = True,
                        crash: "CrashPlan | None" = None) -> None:
        """``StartExecution`` with ``event`` as its input, at virtual time ``at``; its orders are accepted then.

        ``crash`` applies to the Task's first attempt only.
        """
        self._scheduled += 1

        def begin() -> None:
            self._scheduled -= 1
            self._begin(event, accept, crash)

        self.world.scheduler.call_at(at, begin, name="StartExecution")

    def idle(self) -> bool:
        """Every execution has ended and every invocation it started has too (they outlive a timed-out Task)."""
        return (self._scheduled == 0 and all(e.task.done for e in self.executions)
                and all(a.invocation.done for e in self.executions for a in e.attempts))

    def finish(self) -> None:
        """At the end of a run: the orders of an execution still running (waiting to retry) are pending."""
        for e in self.executions:
            if e.status == RUNNING:
                last = e.attempts[-1].invocation.id if e.attempts else None
                self.pending(e.keys, "the execution was still running: its Task waits to be retried", last,
                             execution=e.arn, attempts=len(e.attempts))

    # -- one execution -------------------------------------------------------------------------
    def _begin(self, event: Any, accept: bool, crash: "CrashPlan | None") -> None:
        world = self.world
        orders = list(orders_in(event))
        if accept:
            for order in orders:
                world.accept(order, source=self.kind)
        name = world.new_uuid()  # StartExecution without a name: Step Functions makes a UUID
        execution = Execution(name, f"arn:aws:states:{world.region}:{ACCOUNT}:execution:{self.state_machine}:{name}",
                              event, [str(o["orderId"]) for o in orders], world.clock.elapsed(), crash)
        self.executions.append(execution)
        execution.task = world.scheduler.spawn(self._run, execution, name=f"execution {name[:8]}")

    def _run(self, execution: Execution) -> None:
        """The Task: attempt, and while the retrier matches and has retries left, wait and attempt again."""
        prev = None
        while True:
            attempt = self._attempt(execution, prev)
            if attempt.error is None:
                execution.status = SUCCEEDED
                self.world.note(self._describe(execution))
                return
            delay, why = self._next_retry(execution, attempt)
            if delay is None:
                self._fail(execution, attempt, why)
                return
            now = self.world.clock.elapsed()
            self.world.record_delivery(self.kind, Delivery.RETRY_SCHEDULED, execution.keys, attempt.invocation.id, {
                "execution": execution.arn, "attempt": attempt.number + 1, "delay": round(delay, 6),
                "at": round(now + delay, 6), "error": attempt.error, "retrier": list(self.config.errors)})
            self.world.scheduler.sleep(delay, label=f"Retry {attempt.number} in {delay:g} s")
            prev = attempt.invocation.id

    def _attempt(self, execution: Execution, prev: str | None) -> TaskAttempt:
        """Invoke the function and wait for it, up to the Task's TimeoutSeconds; record what the Task got."""
        world, cfg = self.world, self.config
        retry = len(execution.attempts)
        inv = self.function.start(execution.input, source=self.kind,
                                  cause=Cause.FIRST_DELIVERY if retry == 0 else Cause.retry(retry), prev=prev,
                                  keys=execution.keys, crash=execution.crash if retry == 0 else None)
        attempt = TaskAttempt(retry, inv, world.clock.elapsed())
        execution.attempts.append(attempt)
        world.scheduler.wait_for(inv.task, timeout=cfg.timeout_seconds or None, label=f"Task {TASK_STATE}")
        attempt.ended = world.clock.elapsed()
        attempt.error, attempt.cause = task_error(inv, cfg.timeout_seconds)
        detail: TaskDetail = {"attempt": attempt.number, "retryCount": retry, "invocation": inv.id,
                                  "sent": round(attempt.sent, 6), "execution": execution.arn, "state": TASK_STATE}
        if cfg.timeout_seconds:
            detail["timeout_seconds"] = cfg.timeout_seconds
        if attempt.error is not None:
            detail["error"], detail["cause"] = attempt.error, attempt.cause
        world.gateway.record(SERVICE, OP, self.state_machine, execution.keys[0] if execution.keys else None,
                             attempt.error or AWS_OK, detail)
        return attempt

    def _next_retry(self, execution: Execution, attempt: TaskAttempt) -> tuple[float | None, str]:
        """Seconds until the next attempt, or None and why the execution fails now."""
        cfg = self.config
        assert attempt.error is not None  # only a failed attempt is retried
        if not cfg.matches(attempt.error):
            return None, f"no retrier matches {attempt.error} (ErrorEquals {', '.join(cfg.errors)})"
        if attempt.retry_count >= cfg.max_attempts:
            return None, (f"the retrier's MaxAttempts ({cfg.max_attempts}) {'were' if cfg.max_attempts != 1 else 'was'}"
                          f" used up: {len(execution.attempts)} attempt{'s' if len(execution.attempts) != 1 else ''} "
                          f"failed")
        delay = cfg.backoff(attempt.number)
        if cfg.jitter_strategy == "FULL":
            delay = self.world.rng.uniform(0.0, delay)
        left = execution.started + MAX_EXECUTION_SECONDS - self.world.clock.elapsed()
        if delay > left:
            self.world.scheduler.sleep(max(0.0, left), label="execution reaching its one-year limit")
            attempt.error = STATES_TIMEOUT
            attempt.cause = "the execution ran past a Standard workflow's maximum execution time (1 year)"
            return None, "the execution reached a Standard workflow's one-year limit while it waited to retry"
        return delay, ""

    def _fail(self, execution: Execution, attempt: TaskAttempt, why: str) -> None:
        """The execution fails with the Task's error: nothing runs its orders again."""
        execution.status, execution.error = FAILED, attempt.error
        reason = f"{attempt.error}: {why}; nothing runs these orders again"
        self.world.record_delivery(self.kind, Delivery.EXECUTION_FAILED, execution.keys, attempt.invocation.id, {
            "execution": execution.arn, "error": attempt.error, "cause": attempt.cause,
            "attempts": len(execution.attempts), "reason": reason})
        self.world.note(self._describe(execution))

    @staticmethod
    def _describe(e: Execution) -> str:
        invs = ", ".join(a.invocation.id for a in e.attempts)
        tries = f"{len(e.attempts)} attempt{'s' if len(e.attempts) != 1 else ''} of its Task ({invs})"
        if e.status == SUCCEEDED:
            return f"execution {e.name[:8]}: {SUCCEEDED} after {tries}."
        return (f"execution {e.name[:8]}: {FAILED} with {e.error} after {tries}; each attempt ran the whole "
                f"input again.")


def task_error(inv: "Invocation", timeout_seconds: int = 0) -> tuple[str | None, str | None]:
    """(error name, cause) the Task failed with, or (None, None) if the function returned a result in time.

    A Task whose invocation has not ended failed with States.Timeout (it ran past TimeoutSeconds);
    a function error is named by its errorType; a timeout or a crash is Lambda.Unknown.
    """
    if inv.outcome is None:
        return STATES_TIMEOUT, f"the Task ran longer than its TimeoutSeconds ({timeout_seconds} s)"
    if inv.outcome == Outcome.OK:
        return None, None
    payload = function_error_payload(inv)
    if inv.outcome in (Outcome.TIMEOUT, Outcome.CRASHED):
        return LAMBDA_UNKNOWN, f"{payload['errorType']}: {payload['errorMessage']}"
    return str(payload["errorType"]), str(payload.get("errorMessage", ""))


__all__ = ["Execution", "LAMBDA_SERVICE_ERRORS", "StepFunctionsSource", "TaskAttempt", "TaskRetryConfig",
           "task_error"]

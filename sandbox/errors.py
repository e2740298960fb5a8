"""Exceptions the sandbox raises, each naming one problem in plain words.

``LambdaTimeout`` and ``InvocationCrashed`` derive from BaseException on purpose: a
learner's ``except Exception`` must not be able to swallow the runtime stopping the
function, just as real Lambda code cannot catch being killed at its deadline.
"""


class SandboxError(Exception):
    """Base class for errors about how the sandbox is used."""


class TemplateFailed(SandboxError):
    """The sandbox could not make an execution environment (its template ended, the machine refused a fork):
    its own failure, never charged to the handler."""


class ResponseTooLarge(Exception):
    """The function's response is over Lambda's 6 MB: a synchronous caller gets Function.ResponseSizeTooLarge
    (https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html)."""

    error_type = "Function.ResponseSizeTooLarge"

    def __init__(self) -> None:
        super().__init__("Response payload size exceeded maximum allowed payload size (6 MB)")


class BadInput(SandboxError):
    """A wrong argument, setting, handler path or event; the message names it."""


class MissingHandler(BadInput):
    """The handler file defines no function of the name given (found without running the file)."""


class RealAwsRefused(SandboxError):
    """A request would have left this machine, or was signed with real-looking credentials."""


class HandlerBlocked(BaseException):
    """An invocation stopped reaching yield points: it is blocked outside the sandbox.

    A BaseException, like the runtime stopping the function: a handler's ``except
    Exception`` must not swallow it and carry on as if nothing happened.
    """


class WorldClosed(BaseException):
    """Raised inside leftover tasks (pollers, stuck invocations) when the world closes."""


class LambdaTimeout(BaseException):
    """The function ran past its configured timeout; Lambda stops it at that moment."""


class InvocationCrashed(BaseException):
    """An injected crash: the execution environment died at this point."""


class StillInProgressError(Exception):
    """Another invocation holds the idempotency lock for this key (the article's error)."""


class ProviderError(Exception):
    """An effect provider (email, payments) failed without performing the effect."""


class RuntimeExit(BaseException):
    """The handler ended its own process (``os._exit``): Lambda reports Runtime.ExitError."""

    #: Lambda's error type for this way of ending (``OutOfMemory`` has its own).
    lambda_error = "Runtime.ExitError"

    #: Set only when an execution environment reports where the code exited (``runtime._where`` asks hasattr).
    where: str
    def __init__(self, code: object = 0):
        super().__init__(f"Runtime exited with error: exit status {code}")
        self.code = code


class OutOfMemory(RuntimeExit):
    """The environment used more memory than the function has: Lambda ends it (Runtime.OutOfMemory).

    https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html"""

    lambda_error = "Runtime.OutOfMemory"

    def __init__(self, memory_mb: object = None) -> None:
        BaseException.__init__(self, "Runtime exited with error: signal: killed")
        self.code = "signal: killed"
        self.memory_mb = memory_mb

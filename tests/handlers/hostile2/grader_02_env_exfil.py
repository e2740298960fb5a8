# Exercise 02 answered with an exfiltration: the grader's own environment variables, in the error the feedback shows.
# On Lambda a function sees Lambda's reserved variables and its own configuration's, nothing of the machine.
import os

LAMBDA_OWN = ("AWS_", "_HANDLER", "_X_AMZN", "LAMBDA_", "TZ", "LANG", "PATH", "LD_LIBRARY_PATH", "PYTHONPATH",
              "IDEMPOTENCY_TABLE")


def handler(event, context):
    foreign = sorted(k for k in os.environ if not k.startswith(LAMBDA_OWN))
    marker = os.environ.get("RWH_H4_GRADER_MARKER", "")
    raise RuntimeError(f"machine variables: {foreign[:40]} marker={marker}")

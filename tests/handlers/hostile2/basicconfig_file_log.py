"""A confused learner's logging: logging.basicConfig(filename=...) under the Lambda runtime, which has already
put a handler on the root logger, so basicConfig does nothing and the file is never made (as on Lambda)."""
import logging

logging.basicConfig(filename="/tmp/app.log", level=logging.INFO)


def handler(event, context):
    logging.info("hello")
    import os
    return {"exists": os.path.exists("/tmp/app.log"), "root_handlers": [type(h).__name__ for h in logging.getLogger().handlers]}

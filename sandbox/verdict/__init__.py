"""Reading one run: the checker's verdict on a history, and who owned each idempotency record when."""

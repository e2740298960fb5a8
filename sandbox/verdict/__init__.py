"""Reading one run: the checker's verdict on a history, composed of the rules shared by every history and
those of the sources it names (``rules/``), and who owned each idempotency record when."""

# Key facts of notebooks/11_what_to_key_on.ipynb, run in its kernel after its last cell.
# ruff: noqa: F821  (the names are the notebook's own variables, defined in its kernel)
# A key on the SQS messageId sends o-2 twice when the producer re-sends it: two messages, two claims won.
assert by_message.status == "invalid"
assert [(f.key, f.effect) for f in by_message.verdict.duplicates] == [("o-2", "email")]
assert by_message.verdict.effects_per_key["o-2"] == {"email": 2}
assert len(set(resend["detail"]["messageIds"])) == 2
assert {e["result"] for e in by_message.history.of_type("aws") if e["op"] == "PutItem"} == {"ok"}

# The matrix: the business id holds in every row; each delivery id breaks somewhere, as the prose reads it.
assert km.holds_everywhere() == ["by_order_id"]
assert all(cells[s]["by_order_id"] == "holds" for s in SCENARIOS)
assert cells["sqs-batch-failure"]["by_message_id"] == "holds"
assert cells["producer-resend"]["by_message_id"] == "breaks: producer re-send"
assert cells["async-retry"]["by_request_id"] == "holds"
assert cells["apigw-client-retry"]["by_request_id"] == "breaks: client retry"
assert cells["sqs-batch-failure"]["by_request_id"] == "breaks: redelivery"
assert cells["async-retry"]["by_event_id"] == "holds"
assert cells["eventbridge-producer-resend"]["by_event_id"] == "breaks: producer re-send"
assert cells["apigw-client-retry"]["by_message_id"] is None  # n/a: no SQS message to read it from

# The payload hash holds on the re-send; hashing a field that changes between sends does not.
assert hashed.valid
assert whole_body[0] != whole_body[1] and defining_only[0] == defining_only[1]

# HTTP: 504, then 409 while the first request holds the key, then the stored 200; one email.
assert [status for _, _, status in answers] == [504, 409, 409, 200]
assert http.valid and http.verdict.effects_per_key == {"o-1": {"email": 1}}
assert ok["statusCode"] == 200 and again == ok  # status and body replayed
assert clash["statusCode"] == 422
assert busy["statusCode"] == 409 and 20 <= int(busy["headers"]["Retry-After"]) <= 25
assert emails == ["o-1", "o-2"]  # the replay, the 422 and the 409 sent nothing

# Try it: a retried Kinesis record keeps its eventID.
assert dict(zip(try_it.keys, try_it.rows[0][2]))["by_stream_event_id"] == "holds"

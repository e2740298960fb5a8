"""Clients share what botocore parses from JSON, and nothing else (sandbox.aws.parsecache.SharedParse).

The world's own clients and those of handlers in the "thread" isolation share it; each world here asks for it.
"""
from __future__ import annotations

import textwrap
import threading

import boto3
import botocore.client
import botocore.regions
from hypothesis import given
from hypothesis import strategies as st
from moto import mock_aws

from sandbox import Sandbox
from sandbox.aws import adapter, parsecache

HANDLER = textwrap.dedent("""
    import boto3

    client = boto3.client("dynamodb")
    own = boto3.session.Session().client("dynamodb")  # a handler's own session loads its own JSON

    def handler(event, context):
        import time
        time.sleep(1)
        return {"client": id(client), "events": id(client.meta.events),
                "model": id(client.meta.service_model), "provider": id(client._ruleset_resolver._provider),
                "own_model": id(own.meta.service_model), "tables": client.list_tables()["TableNames"]}
""")


def test_each_container_builds_its_own_clients_from_one_parse(tmp_path):
    (tmp_path / "app.py").write_text(HANDLER)
    with Sandbox(isolation="thread") as sb:
        fn = sb.function(f"{tmp_path / 'app.py'}:handler")
        invs = [fn.start({}) for _ in range(3)]
        sb.run()
        results, table = [inv.result for inv in invs], sb.table.name
    assert len(fn.containers) == 3
    # three cold starts: three clients, each with its own event handlers, as on Lambda
    assert len({r["client"] for r in results}) == 3 and len({r["events"] for r in results}) == 3
    # one service model and one endpoint provider, parsed once from the shared loader's JSON
    assert len({r["model"] for r in results}) == 1 and len({r["provider"] for r in results}) == 1
    # a session of the handler's own reads its own JSON: its model is its own
    assert not {r["own_model"] for r in results} & {r["model"] for r in results}
    assert all(r["tables"] == [table] for r in results)


def test_botocore_parses_for_each_client_again_once_the_world_closes():
    originals = (botocore.client.ClientCreator._load_service_model, botocore.regions.EndpointProvider)
    with Sandbox(isolation="thread"):
        assert botocore.regions.EndpointProvider is not originals[1]
    assert (botocore.client.ClientCreator._load_service_model, botocore.regions.EndpointProvider) == originals
    with mock_aws():
        session = boto3.Session(region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")
        a, b = session.client("dynamodb"), session.client("dynamodb")
        assert a.meta.service_model is not b.meta.service_model
        assert a._ruleset_resolver._provider is not b._ruleset_resolver._provider
        assert a.list_tables()["TableNames"] == []


def test_only_the_shared_loaders_documents_are_kept(tmp_path):
    """A session of the handler's own (Powertools makes one per container) leaves nothing behind."""
    (tmp_path / "app.py").write_text(HANDLER)
    for seed in range(3):
        with Sandbox(seed=seed, isolation="thread") as sb:
            fn = sb.function(f"{tmp_path / 'app.py'}:handler")
            fn.start({})
            sb.run()
    loader = adapter.shared_loader()
    models = adapter._SHARED_PARSE.models._entries.values()
    assert models and all(docs[0] is loader.load_service_model(model.service_name, "service-2")
                          for docs, model in models)
    providers = adapter._SHARED_PARSE.providers._entries.values()
    assert providers and all(docs[1] is loader.load_data("partitions") for docs, _ in providers)


@given(st.lists(st.integers(0, 11), max_size=60))
def test_parsed_once_builds_once_per_document_and_never_confuses_documents(uses):
    cache = parsecache._ParsedOnce()
    documents = [{"n": n} for n in range(12)]
    built: dict[int, object] = {}
    for n in uses:
        got = cache.get((documents[n],), ("dynamodb",), lambda: object())
        assert got is built.setdefault(n, got)  # the first parse of a document comes back every time
    assert len(cache._entries) == len(set(uses))
    # a document whose id an old entry's key holds (ids are reused once an object dies) is parsed for itself
    stranger = {"n": "stranger"}
    cache._entries[(id(stranger), "dynamodb")] = ((documents[0],), "the old document's parse")
    assert cache.get((stranger,), ("dynamodb",), lambda: "stranger's") == "stranger's"
    assert cache.get((stranger,), ("dynamodb",), lambda: "again") == "stranger's"


def test_parsed_once_serves_threads_side_by_side():
    """A real-threads world builds clients on several threads at once: every one gets its own document's parse."""
    cache = parsecache._ParsedOnce()
    documents = [{"n": n} for n in range(10)]
    wrong, errors = [], []

    def worker(seed: int) -> None:
        try:
            for i in range(400):
                n = (seed * 7 + i * 3) % 10
                got = cache.get((documents[n],), (), lambda n=n: ("parsed", n))
                if got != ("parsed", n):
                    wrong.append((n, got))
        except Exception as exc:  # noqa: BLE001 - any error here is the finding
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and wrong == []
    assert len(cache._entries) == 10

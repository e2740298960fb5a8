"""Parse each botocore JSON document once per process, for every client that loads it.

The world's process and every execution environment's template use it (``adapter`` installs it
while a world is open; ``environment.template`` before it forks), so it imports nothing of moto.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import botocore.client
import botocore.regions


class _ParsedOnce:
    """What was built from some JSON documents, looked up by those exact documents.

    Only the shared loader's documents are offered (``SharedParse``), and that loader keeps them
    for the life of the process, so an ``id`` in a key is never reused; each entry checks anyway.
    """

    def __init__(self) -> None:
        self._entries: dict[tuple, tuple[tuple, Any]] = {}

    def get(self, documents: tuple, extra: tuple, build: Callable[[], Any]) -> Any:
        key = (*map(id, documents), *extra)
        hit = self._entries.get(key)
        if hit is None or any(a is not b for a, b in zip(hit[0], documents)):
            # Two threads may both build (a real-threads world starts containers side by side):
            # each parse serves its client, and the last one stays.
            hit = self._entries[key] = (documents, build())
        return hit[1]


class SharedParse:
    """One parsed service model and one endpoint provider per JSON document, for every client.

    botocore's loader caches the JSON it reads, yet each new client parses it again: a
    ``ServiceModel`` (its operation and shape models built on first use) and an
    ``EndpointProvider`` (the endpoint ruleset turned into rule objects, with an LRU cache of
    resolved endpoints). Both are pure functions of their JSON, which botocore never changes
    once loaded, so a client cannot tell a shared one from its own. Every container's cold start
    still builds its clients anew, as on Lambda; they are only spared the parsing.

    Only clients of the shared loader (boto3's default session, ``boto3.client(...)``) take part.
    A handler that makes its own session loads its own JSON, parsed as botocore always does:
    keeping those would keep a copy of every service model per cold start (34 MiB after 30 runs
    of Powertools' handler, which makes a session per container).
    """

    def __init__(self, shared_loader: Callable[[], Any]):
        #: The loader whose documents are shared (None: none yet).
        self.shared_loader = shared_loader
        self.models, self.providers = _ParsedOnce(), _ParsedOnce()
        self._originals: tuple[Any, Any] | None = None

    def install(self) -> None:
        self._originals = (botocore.client.ClientCreator._load_service_model, botocore.regions.EndpointProvider)
        botocore.client.ClientCreator._load_service_model = self._service_model_for(self._originals[0])
        botocore.regions.EndpointProvider = self._endpoint_provider

    def uninstall(self) -> None:
        if self._originals is not None:
            botocore.client.ClientCreator._load_service_model, botocore.regions.EndpointProvider = self._originals
            self._originals = None

    def _service_model_for(self, load: Callable[..., Any]) -> Callable[..., Any]:
        models, shared_loader = self.models, self.shared_loader

        def _load_service_model(creator: Any, service_name: str, api_version: str | None = None) -> Any:
            # botocore's own load is cheap (the loader caches the JSON; parsing is lazy): it
            # names the document, and the model parsed from it before is handed out instead.
            model = load(creator, service_name, api_version)
            loader = shared_loader()
            if loader is None or creator._loader is not loader:
                return model
            return models.get((model._service_description,), (service_name,), lambda: model)

        return _load_service_model

    def _endpoint_provider(self, ruleset_data: Any, partition_data: Any, excluded_params: Any = None) -> Any:
        def build() -> Any:
            assert self._originals is not None  # called only while installed
            return self._originals[1](ruleset_data=ruleset_data, partition_data=partition_data,
                                      excluded_params=excluded_params)

        # The partitions document is one per loader: it tells the shared loader's clients apart.
        loader = self.shared_loader()
        if loader is None or partition_data is not loader.load_data("partitions"):
            return build()
        return self.providers.get((ruleset_data, partition_data), tuple(sorted(excluded_params or ())), build)

"""The researcher's command line, ``cab`` (a console script of this package): a client of the REST API, run on a
researcher's own machine. It imports nothing of the server (an import contract in pyproject.toml): only the
generated client (``cab_cli.api_client``, made by ``scripts/generate-client``), httpx and the progress bars of
``common.progress``. docs/api.md#the-researcher-cli."""

"""End-to-end tests start `toolscale` processes: they share this worker's Prefect server."""

import pytest


@pytest.fixture(scope="session", autouse=True)
def _shared_prefect_server(cli_prefect_server):
    return cli_prefect_server

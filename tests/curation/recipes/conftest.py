"""Fixtures every recipe's tests share."""

from __future__ import annotations

import pytest


@pytest.fixture
def curator_client(client, curator):
    """The test client logged in as the project's curator."""
    client.force_login(curator)
    return client

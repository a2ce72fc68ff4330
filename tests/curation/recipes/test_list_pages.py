"""Every recipe's list page: a project without objects says what to do and offers the new button."""

from __future__ import annotations

import pytest
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("list_name", "new_name", "empty"),
    [
        ("curator-nb-pipelines", "curator-nb-new", "No pipeline yet: import a corpus"),
        ("curator-vhx-sets", "curator-vhx-new", "No test-case set yet: import a JSONL or CSV file"),
        ("curator-vlind-benches", "curator-vlind-new", "No VLind-Bench yet: create one"),
        ("curator-visit-pipelines", "curator-visit-new", "No VisIT-Bench pipeline yet: create one"),
    ],
)
def test_list_page_empty_state_says_what_to_do(curator_client, project, list_name, new_name, empty):
    response = curator_client.get(reverse(list_name))
    assert response.status_code == 200
    html = response.content.decode()
    assert empty in html
    assert reverse(new_name, args=[project.pk]) in html

"""A hunt world: a project with three crowdworkers, the demo corpus as the image pool, the fake
server playing two vision targets (one always says "Yes") and a blind model, and an open round."""

from __future__ import annotations

import uuid

import pytest

from annotator.platform import roles, wakeups
from curation.corpora import demo_corpus
from curation.models import LLMProvider
from curation.recipes.hunt.rounds import round_create
from tests.factories import UserFactory
from tests.fake_openai import VLMPlayers


@pytest.fixture(autouse=True)
def wakeups_of_this_test(monkeypatch):
    """Wake-ups named for this test alone. Their Redis keys are named after the database, and
    SQLite's in-memory test database has one name in every process of a parallel run and gives
    ids again after a rollback: another test's wake-up of "hunt:1", kept for KEEP_S, would end
    this test's long-poll at once."""
    key, token = wakeups._key, uuid.uuid4().hex
    monkeypatch.setattr(wakeups, "_key", lambda name: key(f"{token}:{name}"))


@pytest.fixture
def third_worker(db, project):
    user = UserFactory(username="worker3", role=roles.CROWDWORKER)
    project.members.add(user)
    return user


@pytest.fixture
def players(fake_openai):
    players = VLMPlayers(fixed={"always-yes": "Yes"})
    fake_openai.default = players
    return players


def provider(project, fake, name, model, *, vision=True):
    return LLMProvider.objects.create(
        project=project,
        name=name,
        model=model,
        base_url=fake.base_url,
        api_key="sk-test",
        supports_vision=vision,
        timeout_s=5.0,
        max_retries=1,
    )


@pytest.fixture
def pool(project, curator, media):
    return demo_corpus(project=project, created_by=curator)


@pytest.fixture
def hunt_round(project, curator, pool, fake_openai, players):
    targets = [
        provider(project, fake_openai, "Vision A", "vision-a"),
        provider(project, fake_openai, "Yes-sayer", "always-yes"),
    ]
    blind = provider(project, fake_openai, "Blind", "blind-1", vision=False)
    return round_create(
        project=project,
        created_by=curator,
        name="Round 1",
        corpus=pool,
        targets=targets,
        blind=blind,
        max_per_minute=30,
    )


@pytest.fixture
def two_option_round(project, curator, pool, fake_openai, players):
    """A round of two-option questions (NaturalBench's multiple choice: answered A or B)."""
    targets = [
        provider(project, fake_openai, "Vision A", "vision-a"),
        provider(project, fake_openai, "A-sayer", "always-yes"),  # a fixed "Yes" reads "A"
    ]
    return round_create(
        project=project,
        created_by=curator,
        name="Round two options",
        corpus=pool,
        targets=targets,
        blind=provider(project, fake_openai, "Blind", "blind-1", vision=False),
        question_type="multiple_choice",
        max_per_minute=30,
    )

"""The hunt step's hand-written reads (``hunt.rows``, ``sql_rows.RowWith``, the template pins)
return what the ORM queries they stand for return, field for field; the submit's one statement
counts and refuses as the ORM's aggregate did."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db.models.functions import Length
from django.http import Http404
from django.utils import timezone

from annotator.platform import roles
from annotator.platform.sql_rows import RowWith
from curation.gateway.pins import _pinned, templates_for
from curation.models import Image, TemplatePin
from curation.recipes.framework.jobs import job_object
from curation.recipes.framework.selectors import workable_for, workable_or_404
from curation.recipes.hunt import candidates, rows
from curation.recipes.hunt.models import HuntAnswer, HuntCandidate, HuntRound
from curation.recipes.hunt.recipe import RECIPE
from curation.recipes.naturalbench.models import NaturalBenchPipeline
from curation.recipes.naturalbench.recipe import RECIPE as NB_RECIPE
from evaluation.families.naturalbench.prompts import BY_QUESTION_TYPE
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def values(obj) -> list:
    return [getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields]


def submit(round_, worker, image_id, question="Is there a red thing here?", answer="yes"):
    return candidates.candidate_submit(
        round_=round_, worker=worker, image_id=image_id, question=question, answer=answer
    )


def pool_ids(round_) -> list[int]:
    return list(round_.corpus.samples.order_by("position").values_list("image_id", flat=True))


def test_the_candidate_with_its_images_is_the_orms(hunt_round, crowdworker):
    # Given a candidate with a partner image, and one without
    first, second, third = pool_ids(hunt_round)[:3]
    paired = submit(hunt_round, crowdworker, first)
    HuntCandidate.objects.filter(pk=paired.pk).update(partner_id=second)
    alone = submit(hunt_round, crowdworker, third, question="Is the sky blue in this one?")
    for candidate in (paired, alone):
        # When both are read by hand and by the ORM
        mine = rows.candidate_with_images(hunt_round.pk, candidate.pk)
        orm = HuntCandidate.objects.select_related("image", "partner").get(pk=candidate.pk)
        # Then they hold the same values, images included (no partner: None)
        assert values(mine) == values(orm)
        assert values(mine.image) == values(orm.image)
        assert (mine.partner and values(mine.partner)) == (orm.partner and values(orm.partner))
    # And a candidate of another round (or none) is not found
    assert rows.candidate_with_images(hunt_round.pk + 1000, paired.pk) is None
    assert rows.candidate_with_images(hunt_round.pk, 10**9) is None


def test_the_targets_with_their_providers_are_the_orms(hunt_round):
    mine = rows.targets_with_providers(hunt_round.pk)
    orm = list(hunt_round.targets.select_related("provider"))
    assert [values(t) for t in mine] == [values(t) for t in orm]
    assert [values(t.provider) for t in mine] == [values(t.provider) for t in orm]
    assert [t.position for t in mine] == sorted(t.position for t in mine)


def test_the_limits_statement_counts_as_the_orm(hunt_round, crowdworker, other_worker):
    # Given two questions of one worker (one a minute and a half ago) and one of another
    first, second = pool_ids(hunt_round)[:2]
    old = submit(hunt_round, crowdworker, first)
    HuntCandidate.objects.filter(pk=old.pk).update(
        created_at=timezone.now() - timedelta(seconds=90)
    )
    submit(hunt_round, crowdworker, second, question="Is the sky blue in this one?")
    submit(hunt_round, other_worker, first)
    since = timezone.now() - timedelta(minutes=1)
    # When the worker's limits are read for the first image and its question
    limits = rows.worker_limits(
        round_=hunt_round,
        worker_id=crowdworker.pk,
        image_id=first,
        normal=old.normal,
        since=since,
    )
    # Then: two written, one in the last minute, one the same, the image in the pool
    assert limits == {"written": 2, "recent": 1, "same": 1, "in_pool": True}
    # And an image outside the pool, another worker, another round count apart
    outside = Image.objects.exclude(pk__in=pool_ids(hunt_round)).first()
    if outside is not None:
        assert not rows.worker_limits(
            round_=hunt_round, worker_id=crowdworker.pk, image_id=outside.pk, normal="", since=since
        )["in_pool"]
    assert rows.worker_limits(
        round_=hunt_round, worker_id=other_worker.pk, image_id=first, normal=old.normal, since=since
    ) == {"written": 1, "recent": 1, "same": 1, "in_pool": True}
    assert rows.worker_limits(
        round_=hunt_round, worker_id=crowdworker.pk, image_id=10**9, normal="", since=since
    ) == {"written": 2, "recent": 1, "same": 0, "in_pool": False}


def test_an_image_outside_the_pool_is_refused_and_nothing_is_written(hunt_round, crowdworker):
    before = HuntCandidate.objects.count()
    for image_id in ("10000000", "abc", "0", ""):
        with pytest.raises(candidates.Invalid):
            submit(hunt_round, crowdworker, image_id)
    assert HuntCandidate.objects.count() == before


def test_a_recipe_object_read_by_hand_is_the_orms(hunt_round):
    # The hunt's job object: its round with project and blind model (one statement)
    mine = job_object(RECIPE, hunt_round.pk)
    orm = HuntRound.objects.select_related("project", "blind").get(pk=hunt_round.pk)
    assert values(mine) == values(orm)
    assert values(mine.project) == values(orm.project)
    assert values(mine.blind) == values(orm.blind)
    # A nullable link left empty reads as None, and a missing object raises as get() does
    HuntRound.objects.filter(pk=hunt_round.pk).update(blind=None)
    assert job_object(RECIPE, hunt_round.pk).blind is None
    with pytest.raises(HuntRound.DoesNotExist):
        job_object(RECIPE, 10**9)


def test_row_with_refuses_what_is_not_a_forward_key():
    with pytest.raises(ValueError):
        RowWith(HuntRound, ("targets",))
    # Every recipe's declared reads are forward keys (so their jobs take the one statement)
    RowWith(NaturalBenchPipeline, tuple(NB_RECIPE.select_related))


def test_the_pinned_templates_are_the_orms(hunt_round):
    # Given the round's prompts pinned for its project (at their first use)
    templates_for(list(BY_QUESTION_TYPE.values()), project=hunt_round.project_id)
    pins = TemplatePin.objects.filter(project=hunt_round.project).select_related("template")
    names = [p.name for p in pins]
    assert len(names) == len(set(BY_QUESTION_TYPE.values()))
    mine = _pinned([*names, "no-such-template", names[0]], hunt_round.project_id)
    assert {n: values(t) for n, t in mine.items()} == {p.name: values(p.template) for p in pins}
    assert _pinned([], hunt_round.project_id) == {}


def test_a_worker_page_finds_its_round_by_hand_as_the_queryset_does(
    hunt_round, crowdworker, curator, project
):
    # Given a member crowdworker, an outsider, a curator without the worker role and an admin
    outsider = UserFactory(username="outsider", role=roles.CROWDWORKER)
    admin = UserFactory(username="root", is_superuser=True)

    def found(user, pk):
        try:
            return workable_or_404(RECIPE, user, pk)
        except Http404:
            return None

    for closed in (False, True):
        HuntRound.objects.filter(pk=hunt_round.pk).update(state="closed" if closed else "open")
        for user in (crowdworker, outsider, curator, admin):
            for pk in (hunt_round.pk, 10**9):
                # When the page's lookup and the queryset it stands for look for the round
                mine = found(user, pk)
                orm = workable_for(RECIPE, user).filter(pk=pk).first()
                # Then both find it or neither does, with the same fields, project and blind
                assert (mine is None) == (orm is None), (user.username, closed, pk)
                if mine is not None:
                    assert values(mine) == values(orm)
                    assert values(mine.project) == values(orm.project)
                    assert values(mine.blind) == values(orm.blind)
    # The member finds the open round; the outsider and the curator never do
    HuntRound.objects.filter(pk=hunt_round.pk).update(state="open")
    assert found(crowdworker, hunt_round.pk) is not None and found(admin, hunt_round.pk)
    assert found(outsider, hunt_round.pk) is None and found(curator, hunt_round.pk) is None


def test_the_earlier_questions_are_the_orms(hunt_round, crowdworker, other_worker):
    # Given questions of two lengths by two workers, in this round
    ids = pool_ids(hunt_round)
    made = [
        submit(hunt_round, worker, ids[k % len(ids)], question=text)
        for k, (worker, text) in enumerate(
            [
                (crowdworker, "Is the mug on the left of the laptop?"),
                (other_worker, "Is there a cat?"),
                (crowdworker, "Is the cup on the left of the laptop?"),
                (other_worker, "Is the mug on the right of the laptop?"),
            ]
        )
    ]
    last = made[-1]
    fewest, most = 30, 45
    # When the earlier ones of a length that can come near are read by hand and by the ORM
    mine = list(rows.earlier_questions(hunt_round.pk, last.pk, fewest, most, chunk=1))
    orm = list(
        HuntCandidate.objects.filter(round=hunt_round, pk__lt=last.pk)
        .alias(length=Length("normal"))
        .filter(length__gte=fewest, length__lte=most)
        .order_by("-pk")
        .values_list("pk", "normal")
    )
    # Then they are the same, newest first, the short one left out
    assert mine == orm and [pk for pk, _n in mine] == [made[2].pk, made[0].pk]


@pytest.mark.parametrize("pk", [2**63, 10**30, -(2**63) - 1])
def test_an_id_beyond_the_keys_range_is_a_404_not_a_database_error(hunt_round, crowdworker, pk):
    # PostgreSQL compares such a number as numeric and finds nothing; SQLite's driver (the
    # demo's database) refuses it with an OverflowError: RowWith answers before either.
    with pytest.raises(Http404):
        workable_or_404(RECIPE, crowdworker, pk)
    with pytest.raises(HuntRound.DoesNotExist):
        job_object(RECIPE, pk)


def test_a_worker_page_with_a_huge_id_answers_404(client, crowdworker, hunt_round):
    client.force_login(crowdworker)
    for path in (f"/work/hunt/{10**30}/", f"/work/hunt/{hunt_round.pk}/items/{10**30}/"):
        assert client.get(path).status_code == 404, path


def test_the_workers_candidate_with_its_images_and_job_is_the_orms(
    hunt_round, crowdworker, other_worker
):
    # Given a worker's candidate with a partner (and its job), and another worker's
    first, second = pool_ids(hunt_round)[:2]
    mine_ = submit(hunt_round, crowdworker, first)
    HuntCandidate.objects.filter(pk=mine_.pk).update(partner_id=second)
    theirs = submit(hunt_round, other_worker, first)
    # When the item's page reads it by hand and the ORM reads it as the page did
    got = rows.candidate_of_worker(hunt_round.pk, crowdworker.pk, mine_.pk)
    orm = (
        HuntCandidate.objects.filter(round=hunt_round, worker=crowdworker)
        .select_related("image", "partner", "job")
        .get(pk=mine_.pk)
    )
    # Then they hold the same values, the image, partner and job included
    assert values(got) == values(orm)
    for name in ("image", "partner", "job"):
        assert values(getattr(got, name)) == values(getattr(orm, name)), name
    assert got.job is not None
    # And another worker's candidate, another round's or a missing one is not found
    assert rows.candidate_of_worker(hunt_round.pk, crowdworker.pk, theirs.pk) is None
    assert rows.candidate_of_worker(hunt_round.pk + 1000, crowdworker.pk, mine_.pk) is None
    assert rows.candidate_of_worker(hunt_round.pk, crowdworker.pk, 10**9) is None


def test_the_answers_are_the_orms(hunt_round, crowdworker):
    # Given a candidate answered by both targets and the blind model on two slots
    candidate = submit(hunt_round, crowdworker, pool_ids(hunt_round)[0])
    other = submit(hunt_round, crowdworker, pool_ids(hunt_round)[1], question="Is it blue?")
    targets = list(hunt_round.targets.all())
    for slot in ("q0_i1", "q0_i0"):
        for target in [*targets, None]:
            HuntAnswer.objects.create(
                candidate=candidate,
                target=target,
                slot=slot,
                text="Yes.",
                parsed="a0",
                correct=target is None,
            )
    HuntAnswer.objects.create(candidate=other, slot="q0_i0", text="No.", parsed="a1", correct=1)
    # When they are read by hand and by the ORM
    got = rows.answers_of(candidate.pk)
    orm = list(candidate.answers.all())
    # Then they are the same answers (in the order stored), none of the other candidate's
    assert len(got) == 2 * (len(targets) + 1)
    assert [values(a) for a in got] == sorted((values(a) for a in orm), key=lambda v: v[0])
    assert rows.answers_of(10**9) == []

"""``manage.py demo_recipes`` (run by `make run` after ``demo``): every recipe's demo pipeline
is built, leaves work waiting for a visitor, labels offline output; a second run changes nothing."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator.models import Task
from curation.models import Generation
from curation.recipes.naturalbench.models import NaturalBenchPipeline
from curation.recipes.vhexpansion.models import VHCaseSet

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]


@pytest.fixture
def demo_settings(settings, tmp_path, eager):
    # ``eager`` also sets Celery's own flag and clears it afterwards: Celery reads Django's
    # settings once per process, so the setting alone could leave every later test of this
    # process running its jobs eagerly (a browser test that expects a job to wait failed so)
    settings.DEBUG = True
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.BLINDSPOT_EMBEDDINGS_DIR = tmp_path / "embeddings"
    return settings


def test_recipe_demos_need_the_demo_project_first(demo_settings):
    with pytest.raises(CommandError, match="manage.py demo"):
        call_command("demo_recipes", stdout=StringIO())


def test_recipe_demos_build_each_pipeline_once(demo_settings):
    call_command("demo", stdout=StringIO())
    out = StringIO()
    call_command("demo_recipes", stdout=out)
    for name in ("NaturalBench", "VHExpansion", "VLind-Bench", "VisIT-Bench"):
        assert f"{name} demo ready" in out.getvalue()

    # NaturalBench ran end to end with the offline drafter, and left tasks open for a visitor.
    pipeline = NaturalBenchPipeline.objects.get()
    assert pipeline.versions.exists()
    assert Generation.objects.filter(provider_kind="offline").exists()
    assert not Generation.objects.exclude(provider_kind="offline").exists()
    # VHExpansion negated the NaturalBench demo's yes/no items; the negations wait for review.
    case_set = VHCaseSet.objects.get()
    assert case_set.cases.count() > 0
    assert set(case_set.cases.values_list("negation_state", flat=True)) == {"review"}
    open_review = Task.objects.filter(queue=case_set.review_queue, state=Task.State.OPEN)
    assert open_review.count() == case_set.cases.count()

    counts = (Task.objects.count(), Generation.objects.count(), VHCaseSet.objects.count())
    call_command("demo_recipes", stdout=StringIO())
    assert (Task.objects.count(), Generation.objects.count(), VHCaseSet.objects.count()) == counts

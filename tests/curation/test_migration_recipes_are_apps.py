"""Migration curation 0008 and each recipe's 0001 on a populated database: the recipes' models
leave the ``curation`` app for their own apps (``naturalbench``, ``vhexpansion``, ``visit``,
``vlind``) and every row of every recipe table — the many-to-many table too — is read back
unchanged through the new apps, with content types (and so permissions) carried along."""

import pytest
from django.apps import apps as live
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

PREVIOUS = ("curation", "0007_recipe_foreign_keys")  # the last schema with recipes in curation
MOVE = ("curation", "0008_recipes_are_apps")
# Every model the recipes took with them, by the app that holds it now.
MOVED = {
    "naturalbench": [
        "NaturalBenchPipeline",
        "ConfoundingPair",
        "PairQuestionSet",
        "QuestionDraft",
        "VQAItem",
        "NaturalBenchSample",
        "NaturalBenchVersion",
    ],
    "vhexpansion": ["VHCaseSet", "VHCase", "VHNegation", "VHVariant"],
    "visit": [
        "VisitPipeline",
        "VisitFamily",
        "VisitInstance",
        "VisitImage",
        "VisitReference",
        "VisitTask",
        "VisitPair",
        "VisitSubmission",
    ],
    "vlind": ["VLindBench", "VLindConcept", "VLindTriple", "VLindImage"],
}
# Models renamed since the move (visit 0002: instruction families are categories in code).
RENAMED = {"VisitFamily": "VisitCategory"}


def _rows(apps, app_label: str, name: str) -> list[dict]:
    return list(apps.get_model(app_label, name).objects.order_by("pk").values())


def _scorer_links(apps, app_label: str) -> list[tuple[int, int]]:
    through = apps.get_model(app_label, "NaturalBenchPipeline").scorers.through
    return sorted(through.objects.values_list("naturalbenchpipeline_id", "scorer_id"))


def _populate(apps) -> None:
    """One or more rows in each of the 23 recipe tables, made with the historical models of the
    schema before the move (all of them in the ``curation`` app)."""
    model = apps.get_model
    cur = lambda name: model("curation", name)  # noqa: E731
    project = model("annotator", "Project").objects.create(name="Lab", slug="lab")
    queue = model("annotator", "TaskQueue").objects.create(
        project=project, kind="review", title="Q"
    )
    tasks = [
        model("annotator", "Task").objects.create(queue=queue, payload={"n": n}, required=1)
        for n in range(8)
    ]
    job = model("annotator", "Job").objects.create(project=project, kind="naturalbench.export")
    bench = model("evaluation", "Benchmark").objects.create(
        project=project, family="visit", name="VisIT"
    )
    version = model("evaluation", "BenchmarkVersion").objects.create(benchmark=bench, label="v1")
    images = [
        cur("Image").objects.create(
            sha256=f"{n:064x}",
            file=f"images/{n}.png",
            width=4,
            height=3,
            format="PNG",
            byte_size=100 + n,
        )
        for n in range(4)
    ]
    generation = cur("Generation").objects.create(
        provider_kind="offline",
        messages=[{"role": "user", "content": "hi"}],
        model="rules",
        status="ok",
    )
    provider = cur("LLMProvider").objects.create(project=project, name="offline")
    scorers = [
        cur("Scorer").objects.create(label=f"s{n}", model_name="ViT-B-32", pretrained="openai")
        for n in range(2)
    ]
    corpus = cur("Corpus").objects.create(project=project, name="Flickr", slug="flickr")
    samples = [
        cur("Sample").objects.create(corpus=corpus, image=image, source_id=str(n), position=n)
        for n, image in enumerate(images[:2])
    ]
    captions = [
        cur("Caption").objects.create(sample=s, text=f"a dog {n}") for n, s in enumerate(samples)
    ]

    # NaturalBench
    nb = cur("NaturalBenchPipeline").objects.create(
        project=project,
        name="Flickr",
        corpus=corpus,
        provider=provider,
        pair_queue=queue,
        benchmark=bench,
    )
    nb.scorers.set(scorers)
    pair = cur("ConfoundingPair").objects.create(
        pipeline=nb,
        position=0,
        sample_0=samples[0],
        sample_1=samples[1],
        caption_0=captions[0],
        caption_1=captions[1],
        task=tasks[0],
    )
    qset = cur("PairQuestionSet").objects.create(pipeline=nb, pair=pair, question_type="yes_no")
    draft = cur("QuestionDraft").objects.create(
        question_set=qset,
        attempt=1,
        status="accepted",
        question_0="Is it red?",
        question_1="Is it blue?",
        generation=generation,
    )
    cur("VQAItem").objects.create(
        draft=draft,
        key="q0_i0",
        image=images[0],
        question="Is it red?",
        intended="Yes",
        answer="Yes",
        task=tasks[1],
    )
    cur("NaturalBenchSample").objects.create(
        pipeline=nb,
        draft=draft,
        state="assembled",
        question_type="yes_no",
        index=0,
        image_0=images[0],
        image_1=images[1],
        tag_task_0=tasks[2],
    )
    cur("NaturalBenchVersion").objects.create(
        pipeline=nb,
        label="v1",
        sha256="a" * 64,
        sample_count=1,
        archive="exports/v1.zip",
        archive_sha256="b" * 64,
        benchmark_version=version,
        job=job,
    )

    # VHExpansion
    case_set = cur("VHCaseSet").objects.create(
        project=project, name="Cases", review_queue=queue, benchmark=bench
    )
    case = cur("VHCase").objects.create(
        case_set=case_set,
        external_id="c1",
        position=0,
        image=images[0],
        question="Is there a dog?",
        answer="yes",
    )
    cur("VHNegation").objects.create(
        case=case,
        attempt=1,
        question="Is there no dog?",
        answer="no",
        generation=generation,
        task=tasks[3],
    )
    cur("VHVariant").objects.create(
        case=case, perturbation="gaussian_noise", kind="common", image=images[2], job=job
    )

    # VisIT-Bench
    visit = cur("VisitPipeline").objects.create(
        project=project,
        name="VisIT",
        provider=provider,
        review_queue=queue,
        version=version,
        benchmark=bench,
    )
    family = cur("VisitFamily").objects.create(pipeline=visit, name="Recipes")
    instance = cur("VisitInstance").objects.create(
        pipeline=visit, family=family, origin="imported", state="verified", instruction="Cook"
    )
    cur("VisitImage").objects.create(instance=instance, image=images[1], position=0)
    cur("VisitImage").objects.create(instance=instance, url="https://x.test/a.png", position=1)
    cur("VisitReference").objects.create(
        instance=instance,
        text="Boil the pasta.",
        source="llm",
        generation=generation,
        task=tasks[4],
    )
    cur("VisitTask").objects.create(
        task=tasks[5], pipeline=visit, stage="instruction", family=family
    )
    cur("VisitPair").objects.create(
        pipeline=visit,
        instance=instance,
        version=version,
        item_id="1",
        model_a="a",
        model_b="b",
        pair_key="a|b",
        task=tasks[6],
    )
    cur("VisitSubmission").objects.create(
        pipeline=visit,
        model_name="model-x",
        format="csv",
        version=version,
        judgment_set_label="judge",
        judge_job=job,
    )

    # VLind-Bench
    vlind = cur("VLindBench").objects.create(
        project=project,
        name="Bench",
        image_provider=provider,
        triple_queue=queue,
        benchmark=bench,
    )
    concept = cur("VLindConcept").objects.create(
        bench=vlind, name="climate", image_hint="a landscape"
    )
    triple = cur("VLindTriple").objects.create(
        bench=vlind,
        concept=concept,
        context_id=1,
        context="It snows in the desert.",
        true_statement="The sand is white.",
        false_statement="The sand is yellow.",
        factual_image=images[3],
        generation=generation,
        task=tasks[7],
    )
    image = cur("VLindImage").objects.create(
        triple=triple,
        slot=0,
        style="photo",
        image=images[2],
        origin="upload",
        generation=generation,
    )
    triple.best_image = image
    triple.save(update_fields=["best_image"])


def _snapshot(apps, label_of) -> dict:
    rows = {
        name: _rows(apps, label_of(app), name) for app, names in MOVED.items() for name in names
    }
    rows["scorers"] = _scorer_links(apps, label_of("naturalbench"))
    return rows


def _content_types(apps) -> dict[str, tuple[str, int]]:
    """Each moved model's content type: (its app label, its id)."""
    content_type = apps.get_model("contenttypes", "ContentType")
    names = [name.lower() for names in MOVED.values() for name in names]
    return {
        ct.model: (ct.app_label, ct.pk)
        for ct in content_type.objects.filter(model__in=names)
        if ct.app_label in ("curation", *MOVED)
    }


@pytest.mark.slow  # migrates the database back and forward
@pytest.mark.django_db(transaction=True)
def test_every_recipe_row_is_read_back_through_its_own_app():
    # Given a database at the schema before the recipes were apps, with rows in every recipe
    # table, the pipeline-scorer links, and content types (with permissions) for the models
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    # (apps with no migration after curation 0008 stay at their leaves; the others go back)
    after = {app for app, _ in executor.loader.graph.backwards_plan(MOVE)}
    others = [n for n in leaves if n[0] not in after]
    before = [PREVIOUS, *others]
    # (manage.py migrate renames visit 0002's content type, visitfamily -> visitcategory, and
    # back when it unapplies 0002; this executor does not, so the test does it both ways)
    renamed = ContentType.objects.filter(app_label="visit", model="visitcategory")
    renamed.update(model="visitfamily")
    executor.migrate(before)
    old = executor.loader.project_state(before).apps
    _populate(old)
    before = _snapshot(old, lambda app: "curation")
    assert all(before.values()), [name for name, rows in before.items() if not rows]
    content_types = _content_types(old)
    assert {label for label, _ in content_types.values()} == {"curation"}
    assert len(content_types) == sum(len(names) for names in MOVED.values())
    permission = old.get_model("auth", "Permission")
    permissions = sorted(
        permission.objects.filter(
            content_type_id__in=[pk for _, pk in content_types.values()]
        ).values_list("pk", "content_type_id", "codename")
    )
    assert permissions

    # When the migrations run forward to the move (curation 0008 and each recipe's first)
    moved = [MOVE, *((app, "0001_initial") for app in MOVED), *others]
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(moved)
    new = executor.loader.project_state(moved).apps

    # Then every row of every table reads back the same through the recipe's own app,
    assert _snapshot(new, lambda app: app) == before
    # the models are no longer in curation,
    moved = {name.lower() for names in MOVED.values() for name in names}
    assert not moved & {m._meta.model_name for m in new.get_app_config("curation").get_models()}
    # each content type moved to its recipe's label with its id (so did the permissions),
    label_of = {name.lower(): app for app, names in MOVED.items() for name in names}
    assert _content_types(new) == {
        model: (label_of[model], pk) for model, (_, pk) in content_types.items()
    }
    assert permissions == sorted(
        new.get_model("auth", "Permission")
        .objects.filter(content_type_id__in=[pk for _, pk in content_types.values()])
        .values_list("pk", "content_type_id", "codename")
    )
    # and, on to the leaves, the live models read the same tables.
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(leaves)
    ContentType.objects.filter(app_label="visit", model="visitfamily").update(model="visitcategory")
    for app, names in MOVED.items():
        for name in names:
            count = live.get_model(app, RENAMED.get(name, name)).objects.count()
            assert count == len(before[name]), name

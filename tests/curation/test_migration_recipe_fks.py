"""Migration curation 0007 on a populated database: the recipes' integer ids become foreign keys
on the same columns, every pipeline gets the benchmark it publishes to, and nothing else moves."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [
    ("annotator", "0004_job_heartbeat"),
    ("curation", "0001_initial_squashed_0006_vlind_bench"),
    ("evaluation", "0004_benchmark_project_required"),
]
# (model, foreign key) -> the table and the evaluation table its constraint points at
FOREIGN_KEYS = [
    ("naturalbenchpipeline", "benchmark", "evaluation_benchmark"),
    ("vhcaseset", "benchmark", "evaluation_benchmark"),
    ("visitpipeline", "benchmark", "evaluation_benchmark"),
    ("vlindbench", "benchmark", "evaluation_benchmark"),
    ("naturalbenchversion", "benchmark_version", "evaluation_benchmarkversion"),
    ("visitpipeline", "version", "evaluation_benchmarkversion"),
    ("visitpipeline", "human_set", "evaluation_judgmentset"),
    ("visitpair", "version", "evaluation_benchmarkversion"),
    ("visitsubmission", "version", "evaluation_benchmarkversion"),
    ("visitsubmission", "run", "evaluation_modelrun"),
]
COUNTED = [
    ("curation", m)
    for m in (
        "NaturalBenchPipeline",
        "NaturalBenchVersion",
        "VHCaseSet",
        "VLindBench",
        "VisitPipeline",
        "VisitPair",
        "VisitSubmission",
    )
] + [("evaluation", m) for m in ("Benchmark", "BenchmarkVersion", "JudgmentSet", "ModelRun")]

# The app each recipe model is in at the leaves (curation 0008 moved them out of curation).
APP_OF = {
    **dict.fromkeys(["NaturalBenchPipeline", "NaturalBenchVersion"], "naturalbench"),
    "VHCaseSet": "vhexpansion",
    "VLindBench": "vlind",
    **dict.fromkeys(["VisitPipeline", "VisitPair", "VisitSubmission"], "visit"),
}
APP_OF |= {name.lower(): app for name, app in APP_OF.items()}


def _populated_before() -> tuple[list[tuple[str, str]], object, dict]:
    """The database migrated back to before 0007 and filled by ``_populate``: the leaves to
    return to, the historical apps and the rows' ids."""
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    return leaves, old, _populate(old)


def _forward(leaves: list[tuple[str, str]]) -> MigrationExecutor:
    """Run the migrations forward to `leaves` with a fresh graph."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(leaves)
    return executor


def _populate(apps) -> dict:
    """The rows of a database in use before 0007, made with the historical models."""
    model = apps.get_model
    project = model("annotator", "Project").objects.create(name="Lab", slug="lab")
    benchmark = model("evaluation", "Benchmark")
    version = model("evaluation", "BenchmarkVersion")
    # Same name, another family: the backfill must not take it for the NaturalBench benchmark.
    benchmark.objects.create(project=project, family="vlind", name="lab · Flickr")
    nb_bench = benchmark.objects.create(project=project, family="naturalbench", name="lab · Flickr")
    nb_v1 = version.objects.create(benchmark=nb_bench, label="v1")
    vhx_bench = benchmark.objects.create(project=project, family="vhexpansion", name="Cases · lab")
    vlind_bench = benchmark.objects.create(project=project, family="vlind", name="Bench · lab")
    visit_bench = benchmark.objects.create(project=project, family="visit", name="VisIT")
    visit_v1 = version.objects.create(benchmark=visit_bench, label="v1")
    human = model("evaluation", "JudgmentSet").objects.create(
        version=visit_v1, kind="human", label="crowd"
    )
    evaluated = model("evaluation", "EvaluatedModel").objects.create(name="model-x")
    run = model("evaluation", "ModelRun").objects.create(model=evaluated, version=visit_v1)

    corpus = model("curation", "Corpus").objects.create(project=project, name="Flickr", slug="f")
    nb = model("curation", "NaturalBenchPipeline").objects.create(
        project=project, name="Flickr", corpus=corpus
    )
    published = _nb_version(model, nb, "v1", "ab", benchmark_version_id=nb_v1.pk)
    dangling = _nb_version(model, nb, "v2", "cd", benchmark_version_id=nb_v1.pk + 1000)
    vhx = model("curation", "VHCaseSet").objects.create(project=project, name="Cases")
    vlind = model("curation", "VLindBench").objects.create(project=project, name="Bench")
    visit = model("curation", "VisitPipeline").objects.create(
        project=project, name="VisIT", version_id=visit_v1.pk, human_set_id=human.pk
    )
    family = model("curation", "VisitFamily").objects.create(pipeline=visit, name="Recipes")
    instance = model("curation", "VisitInstance").objects.create(
        pipeline=visit, family=family, origin="imported", state="verified", instruction="Cook"
    )
    pair = model("curation", "VisitPair").objects.create(
        pipeline=visit,
        instance=instance,
        version_id=visit_v1.pk,
        item_id="1",
        model_a="a",
        model_b="b",
        pair_key="a|b",
    )
    submission = model("curation", "VisitSubmission").objects.create(
        pipeline=visit,
        model_name="model-x",
        format="csv",
        version_id=visit_v1.pk,
        run_id=run.pk,
        judgment_set_label="judge",
    )
    return {
        "nb": (nb.pk, nb_bench.pk),
        "vhx": (vhx.pk, vhx_bench.pk),
        "vlind": (vlind.pk, vlind_bench.pk),
        "visit": (visit.pk, visit_bench.pk),
        "published": (published.pk, nb_v1.pk),
        "dangling": dangling.pk,
        "visit_version": visit_v1.pk,
        "human": human.pk,
        "pair": pair.pk,
        "submission": (submission.pk, run.pk),
    }


def _nb_version(model, pipeline, label: str, digits: str, *, benchmark_version_id: int):
    """A published NaturalBench version whose sample file and archive hashes repeat `digits`."""
    sha, archive_sha = digits
    return model("curation", "NaturalBenchVersion").objects.create(
        pipeline=pipeline,
        label=label,
        sha256=sha * 64,
        sample_count=4,
        archive=f"{sha}.zip",
        archive_sha256=archive_sha * 64,
        benchmark_version_id=benchmark_version_id,
    )


def _counts(apps, *, moved: bool) -> dict[str, int]:
    """Row counts; once the recipes are apps (curation 0008) their models are in them."""
    return {
        name: apps.get_model(APP_OF.get(name, app) if moved else app, name).objects.count()
        for app, name in COUNTED
    }


@pytest.mark.slow  # migrates the database back and forward
@pytest.mark.django_db(transaction=True)
def test_recipe_ids_become_foreign_keys_with_their_data():
    # Given a database at the schema before 0007, with a project's four pipelines, a NaturalBench
    # version that points at an evaluation version and one whose version is gone, a VisIT
    # pipeline with its version, human judgment set, a pair and a submission with its run, and
    # benchmarks named the way the publish code named them (one trip back and forth serves the
    # refusal and the migration: each trip costs a minute)
    leaves, old, ids = _populated_before()
    counts = _counts(old, moved=False)

    # When the pair's (required) version id names no evaluation version, then 0007 refuses,
    # naming the row and the id
    pairs = old.get_model("curation", "VisitPair").objects.filter(pk=ids["pair"])
    pairs.update(version_id=ids["visit_version"] + 1000)
    try:
        with pytest.raises(RuntimeError) as refused:
            _forward(leaves)
        assert str(refused.value).startswith(
            f"curation.visitpair.version_id names evaluation.benchmarkversion rows that do not "
            f"exist (#{ids['pair']} → {ids['visit_version'] + 1000})"
        )
    finally:
        # When the row is repaired, the migrations run forward to the leaves (whatever happened
        # above: the next tests need the leaves)
        pairs.update(version_id=ids["visit_version"])
        new = _forward(leaves).loader.project_state(leaves).apps

    # Then every foreign key points where its integer did, the dangling id is NULL,
    model = new.get_model
    published, nb_version = ids["published"]
    assert (
        model("naturalbench", "NaturalBenchVersion").objects.get(pk=published).benchmark_version_id
    )
    assert (
        model("naturalbench", "NaturalBenchVersion").objects.get(pk=published).benchmark_version.pk
        == nb_version
    )
    assert (
        model("naturalbench", "NaturalBenchVersion")
        .objects.get(pk=ids["dangling"])
        .benchmark_version
        is None
    )
    visit = model("visit", "VisitPipeline").objects.get(pk=ids["visit"][0])
    assert (visit.version.pk, visit.human_set.pk) == (ids["visit_version"], ids["human"])
    pair = model("visit", "VisitPair").objects.get(pk=ids["pair"])
    assert pair.version.pk == ids["visit_version"]
    submission_pk, run_pk = ids["submission"]
    submission = model("visit", "VisitSubmission").objects.get(pk=submission_pk)
    assert (submission.version.pk, submission.run.pk) == (ids["visit_version"], run_pk)
    # each pipeline knows the benchmark it publishes to,
    for key, name in (
        ("nb", "NaturalBenchPipeline"),
        ("vhx", "VHCaseSet"),
        ("vlind", "VLindBench"),
        ("visit", "VisitPipeline"),
    ):
        pk, benchmark_pk = ids[key]
        assert model(APP_OF[name], name).objects.get(pk=pk).benchmark_id == benchmark_pk, name
    # and no row was added or lost
    assert _counts(new, moved=True) == counts
    if connection.vendor == "postgresql":
        _assert_foreign_key_constraints(new)


def _assert_foreign_key_constraints(apps) -> None:
    """On PostgreSQL each new key is a real constraint, and the old ``>= 0`` checks are gone."""
    with connection.cursor() as cursor:
        for model_name, field, target in FOREIGN_KEYS:
            meta = apps.get_model(APP_OF[model_name], model_name)._meta
            column = meta.get_field(field).column
            constraints = connection.introspection.get_constraints(cursor, meta.db_table)
            keys = [
                c["foreign_key"]
                for c in constraints.values()
                if c["foreign_key"] and c["columns"] == [column]
            ]
            assert keys == [(target, "id")], (model_name, field, constraints)
            checks = [n for n, c in constraints.items() if c["check"] and c["columns"] == [column]]
            assert checks == [], (model_name, field)

"""Recipe models hold real foreign keys to what they published in the evaluation app.

1. Each pipeline model gets ``benchmark`` (the evaluation Benchmark it publishes to) from the
   abstract ``RecipePipeline``; the project foreign keys' reverse names become ``+``.
2. Data: optional integer ids whose row is gone become NULL; ``benchmark`` is filled in by the
   name the publish code used (NaturalBench ``"<project slug> · <name>"``, VHExpansion and
   VLind-Bench ``"<name> · <project slug>"``, VisIT-Bench the benchmark of its version). A
   required id whose row is gone stops the migration, naming the rows.
3. The integer ids become foreign keys on the same columns (``*_id`` keeps working): first in
   the state only, without constraint or index, then ``AlterField`` adds both. On PostgreSQL the
   old ``>= 0`` checks of the positive integer columns are dropped.
"""

import django.db.models.deletion
from django.db import migrations, models

# (model, integer field, foreign key name, target model, on_delete, null)
INTEGER_IDS = [
    (
        "naturalbenchversion",
        "benchmark_version_id",
        "benchmark_version",
        "benchmarkversion",
        models.SET_NULL,
        True,
    ),
    ("visitpipeline", "version_id", "version", "benchmarkversion", models.SET_NULL, True),
    ("visitpipeline", "human_set_id", "human_set", "judgmentset", models.SET_NULL, True),
    ("visitpair", "version_id", "version", "benchmarkversion", models.RESTRICT, False),
    ("visitsubmission", "version_id", "version", "benchmarkversion", models.RESTRICT, False),
    ("visitsubmission", "run_id", "run", "modelrun", models.SET_NULL, True),
]
PIPELINES = ["naturalbenchpipeline", "vhcaseset", "visitpipeline", "vlindbench"]


def _foreign_key(target: str, on_delete, null: bool, **extra) -> models.ForeignKey:
    return models.ForeignKey(
        blank=null,
        null=null,
        on_delete=on_delete,
        related_name="+",
        to=f"evaluation.{target}",
        **extra,
    )


def _benchmark_field() -> models.ForeignKey:
    return _foreign_key("benchmark", models.SET_NULL, True)


def _check_ids(apps, schema_editor):
    """NULL optional ids whose row is gone; refuse (naming them) required ones."""
    for model_name, field, _fk, target, _on_delete, null in INTEGER_IDS:
        model = apps.get_model("curation", model_name)
        existing = apps.get_model("evaluation", target).objects.values("pk")
        dangling = model.objects.exclude(**{f"{field}__isnull": True}).exclude(
            **{f"{field}__in": existing}
        )
        if null:
            dangling.update(**{field: None})
            continue
        bad = list(dangling.order_by("pk").values_list("pk", field)[:20])
        if bad:
            shown = ", ".join(f"#{pk} → {value}" for pk, value in bad)
            raise RuntimeError(
                f"curation.{model_name}.{field} names evaluation.{target} rows that do not "
                f"exist ({shown}); delete or repair these rows, then migrate again."
            )


def _benchmark_of(apps, family: str, project_id: int, name: str):
    Benchmark = apps.get_model("evaluation", "Benchmark")
    return (
        Benchmark.objects.filter(project_id=project_id, family=family, name=name[:200])
        .values_list("pk", flat=True)
        .first()
    )


def _backfill_benchmarks(apps, schema_editor):
    """``benchmark`` as the publish code found it by name (and, for VisIT, by its version)."""
    named = [
        ("naturalbenchpipeline", "naturalbench", lambda p: f"{p.project.slug} · {p.name}"),
        ("vhcaseset", "vhexpansion", lambda p: f"{p.name} · {p.project.slug}"),
        ("vlindbench", "vlind", lambda p: f"{p.name} · {p.project.slug}"),
    ]
    for model_name, family, name_of in named:
        model = apps.get_model("curation", model_name)
        for pipeline in model.objects.select_related("project").order_by("pk"):
            benchmark_id = _benchmark_of(apps, family, pipeline.project_id, name_of(pipeline))
            if benchmark_id is not None:
                model.objects.filter(pk=pipeline.pk).update(benchmark_id=benchmark_id)
    VisitPipeline = apps.get_model("curation", "VisitPipeline")
    BenchmarkVersion = apps.get_model("evaluation", "BenchmarkVersion")
    benchmark_of_version = dict(BenchmarkVersion.objects.values_list("pk", "benchmark_id"))
    for pk, version_id in VisitPipeline.objects.filter(version_id__isnull=False).values_list(
        "pk", "version_id"
    ):
        VisitPipeline.objects.filter(pk=pk).update(benchmark_id=benchmark_of_version[version_id])


def forwards(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        # Check the new benchmark keys now, not at commit: a deferred check still pending would
        # refuse the ALTER TABLEs below ("pending trigger events").
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    _check_ids(apps, schema_editor)
    _backfill_benchmarks(apps, schema_editor)


def drop_positive_checks(apps, schema_editor):
    """PostgreSQL names a column's inline check ``<table>_<column>_check``."""
    if schema_editor.connection.vendor != "postgresql":
        return
    for model_name, field, *_rest in INTEGER_IDS:
        table = apps.get_model("curation", model_name)._meta.db_table
        schema_editor.execute(
            f"ALTER TABLE {schema_editor.quote_name(table)} DROP CONSTRAINT IF EXISTS "
            f"{schema_editor.quote_name(f'{table}_{field}_check')}"
        )


def _to_foreign_key(model_name, field, fk, target, on_delete, null):
    """The same column, now a foreign key: state first (no SQL), then constraint and index."""
    return [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(model_name=model_name, name=field),
                migrations.AddField(
                    model_name=model_name,
                    name=fk,
                    field=_foreign_key(
                        target, on_delete, null, db_constraint=False, db_index=False
                    ),
                ),
            ]
        ),
        migrations.AlterField(
            model_name=model_name, name=fk, field=_foreign_key(target, on_delete, null)
        ),
    ]


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0001_initial_squashed_0006_vlind_bench"),
        ("evaluation", "0004_benchmark_project_required"),
    ]

    operations = [
        *[
            migrations.AddField(model_name=model, name="benchmark", field=_benchmark_field())
            for model in PIPELINES
        ],
        *[
            migrations.AlterField(
                model_name=model,
                name="project",
                field=models.ForeignKey(
                    on_delete=django.db.models.deletion.CASCADE,
                    related_name="+",
                    to="annotator.project",
                ),
            )
            for model in PIPELINES
        ],
        migrations.RunPython(forwards, migrations.RunPython.noop),
        *[op for spec in INTEGER_IDS for op in _to_foreign_key(*spec)],
        migrations.RunPython(drop_positive_checks, migrations.RunPython.noop),
    ]

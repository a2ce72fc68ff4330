"""VHExpansion accuracy becomes the paper's Definition 2 (the test cases as given, not their
negations; vhexpansion.txt Sec. 4, Table 3). Runs computed before this release stored under
"accuracy" the share over both cases of every pair; this recomputes every VHExpansion run that
has metrics, with the code of this release, so published leaderboards show the paper's accuracy
(and the old number under its own name, "accuracy_all_cases"). Seeds and bootstrap rounds are
the ones each run's results were computed with. Nothing to undo: going back leaves the values.
"""

from django.db import migrations

from evaluation import compute
from evaluation.families.vhexpansion import metric_rows as vh_rows

FAMILY = "vhexpansion"
DEFAULT_ROUNDS = 1000


def recompute(apps, schema_editor) -> None:
    ModelRun = apps.get_model("evaluation", "ModelRun")
    MetricResult = apps.get_model("evaluation", "MetricResult")
    runs = ModelRun.objects.filter(
        version__benchmark__family=FAMILY, metric_results__isnull=False
    ).distinct()
    items_of: dict[int, list] = {}
    for run in runs.order_by("id"):
        if run.version_id not in items_of:
            items_of[run.version_id] = [
                compute.ItemData(item_id, data, kept)
                for item_id, data, kept in apps.get_model("evaluation", "BenchmarkItem")
                .objects.filter(version_id=run.version_id)
                .order_by("position")
                .values_list("item_id", "data", "kept")
            ]
        predictions = {
            item_id: compute.PredictionData(raw, parsed, scores)
            for item_id, raw, parsed, scores in run.predictions.values_list(
                "item__item_id", "raw_output", "parsed_answer", "scores"
            )
        }
        before = MetricResult.objects.filter(run=run, metric="symmetric_accuracy").first()
        rounds = ((before.details or {}).get("rounds") if before else None) or DEFAULT_ROUNDS
        for row in vh_rows.rows(
            items_of[run.version_id], predictions, seed=run.seed, rounds=rounds
        ):
            MetricResult.objects.update_or_create(
                run=run,
                metric=row.metric,
                defaults={
                    "value": row.value,
                    "interval_low": row.low,
                    "interval_high": row.high,
                    "n": row.n,
                    "breakdown": row.breakdown,
                    "details": row.details,
                    "code_version": compute.CODE_VERSION,
                },
            )


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0005_benchmark_family_registry"),
    ]

    operations = [migrations.RunPython(recompute, migrations.RunPython.noop, elidable=True)]

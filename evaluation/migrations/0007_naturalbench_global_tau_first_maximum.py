"""NaturalBench's global-optimal τ takes the first maximum (issue 21 item 7): among thresholds with
the same, highest G-Acc, the smallest — before, the one closest to 0. G-Acc and its interval do not
depend on the tie rule (each bootstrap round keeps the highest G-Acc either way); the τ found and
the Acc / Q-Acc / I-Acc reported at it do. This recomputes those details of every NaturalBench
run's ``g_acc_global_tau`` with the code of this release. Nothing to undo.
"""

import math

import numpy as np
from django.db import migrations

from evaluation.metrics import naturalbench as nb

FAMILY = "naturalbench"
METRIC = "g_acc_global_tau"


def recompute(apps, schema_editor) -> None:
    MetricResult = apps.get_model("evaluation", "MetricResult")
    BenchmarkItem = apps.get_model("evaluation", "BenchmarkItem")
    Prediction = apps.get_model("evaluation", "Prediction")
    results = MetricResult.objects.filter(
        metric=METRIC, run__version__benchmark__family=FAMILY
    ).select_related("run")
    for result in results.order_by("id"):
        run = result.run
        kept = list(
            BenchmarkItem.objects.filter(version_id=run.version_id, kept=True)
            .order_by("position")
            .values_list("pk", flat=True)
        )
        scores = dict(
            Prediction.objects.filter(run=run, item_id__in=kept).values_list("item_id", "scores")
        )
        if not kept or any("p_a0" not in (scores.get(pk) or {}) for pk in kept):
            continue
        p_a0 = np.array([scores[pk]["p_a0"] for pk in kept], dtype=float)
        p_a1 = np.array([scores[pk]["p_a1"] for pk in kept], dtype=float)
        found = nb.global_optimal_scores(p_a0, p_a1, with_intervals=False)
        result.details = {
            **(result.details or {}),
            "tau": found.tau if math.isfinite(found.tau) else str(found.tau),
            "tau_rule": nb.TAU_RULE,
            "acc": found.acc,
            "q_acc": found.q_acc,
            "i_acc": found.i_acc,
        }
        result.save(update_fields=["details"])


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0006_vhexpansion_accuracy_definition_2"),
    ]

    operations = [migrations.RunPython(recompute, migrations.RunPython.noop, elidable=True)]

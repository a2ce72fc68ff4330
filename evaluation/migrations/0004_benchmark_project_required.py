"""Benchmark.project is required; names are unique per project; runs and judgment sets go with
their version (so deleting a project deletes its whole evaluation record)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0002_role_groups"),
        ("evaluation", "0003_benchmark_project_backfill"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="benchmark", name="benchmark_family_name_uniq"),
        migrations.AlterField(
            model_name="benchmark",
            name="project",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="benchmarks",
                to="annotator.project",
            ),
        ),
        migrations.AddConstraint(
            model_name="benchmark",
            constraint=models.UniqueConstraint(
                fields=("project", "family", "name"), name="benchmark_project_family_name_uniq"
            ),
        ),
        migrations.AlterField(
            model_name="modelrun",
            name="version",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="runs",
                to="evaluation.benchmarkversion",
            ),
        ),
        migrations.AlterField(
            model_name="judgmentset",
            name="version",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="judgment_sets",
                to="evaluation.benchmarkversion",
            ),
        ),
    ]

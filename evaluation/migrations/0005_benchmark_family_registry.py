"""Benchmark.family loses its choices: the families are registered in evaluation.registry (each
in evaluation/families/<key>/), not listed in the model. State only: the column is unchanged."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("evaluation", "0004_benchmark_project_required"),
    ]

    operations = [
        migrations.AlterField(
            model_name="benchmark",
            name="family",
            field=models.CharField(max_length=30),
        ),
    ]

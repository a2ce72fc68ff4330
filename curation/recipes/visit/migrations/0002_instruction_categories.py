"""VisIT-Bench's instruction families are called categories in code (the published dataset's
``instruction_category``), so they are not taken for evaluation's benchmark families: the model
VisitFamily becomes VisitCategory (its table keeps its name), the ``family`` foreign keys of
instances and instruction tasks become ``category`` (their columns are renamed, the rows kept)."""

import django.db.models.deletion
from django.db import migrations, models
from django.db.models import Q


class Migration(migrations.Migration):
    dependencies = [("visit", "0001_initial")]

    operations = [
        migrations.RenameModel("VisitFamily", "VisitCategory"),
        migrations.AlterModelOptions(
            name="visitcategory",
            options={"ordering": ["name", "id"], "verbose_name_plural": "visit categories"},
        ),
        migrations.AlterField(
            model_name="visitcategory",
            name="pipeline",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="categories",
                to="visit.visitpipeline",
            ),
        ),
        migrations.RemoveConstraint(model_name="visittask", name="visittask_stage_target"),
        migrations.RenameField("visitinstance", "family", "category"),
        migrations.RenameField("visittask", "family", "category"),
        migrations.AddConstraint(
            model_name="visittask",
            constraint=models.CheckConstraint(
                condition=(Q(stage="instruction") & Q(category__isnull=False))
                | (Q(stage="caption") & Q(image__isnull=False)),
                name="visittask_stage_target",
            ),
        ),
    ]

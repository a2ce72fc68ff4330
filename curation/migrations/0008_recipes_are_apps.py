"""The recipes are their own Django apps now (``curation/recipes/<name>/``, labels
``naturalbench``, ``vhexpansion``, ``visit``, ``vlind``): their models leave this app's state here
and each recipe's ``0001_initial`` takes them up, state only. The tables, their names and their
rows stay where they are (each moved model keeps ``db_table = "curation_<model>"``).

State only, and only the models' deletions: every relation makemigrations removed first (90
RemoveField) was a field of a model deleted here, and each RemoveField re-rendered its model's
relatives, a third of a fresh database's migrate time. The state after it is the same."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0007_recipe_foreign_keys"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(
                    name="ConfoundingPair",
                ),
                migrations.DeleteModel(
                    name="NaturalBenchPipeline",
                ),
                migrations.DeleteModel(
                    name="NaturalBenchSample",
                ),
                migrations.DeleteModel(
                    name="NaturalBenchVersion",
                ),
                migrations.DeleteModel(
                    name="PairQuestionSet",
                ),
                migrations.DeleteModel(
                    name="QuestionDraft",
                ),
                migrations.DeleteModel(
                    name="VHCase",
                ),
                migrations.DeleteModel(
                    name="VHCaseSet",
                ),
                migrations.DeleteModel(
                    name="VHNegation",
                ),
                migrations.DeleteModel(
                    name="VHVariant",
                ),
                migrations.DeleteModel(
                    name="VisitFamily",
                ),
                migrations.DeleteModel(
                    name="VisitImage",
                ),
                migrations.DeleteModel(
                    name="VisitInstance",
                ),
                migrations.DeleteModel(
                    name="VisitPair",
                ),
                migrations.DeleteModel(
                    name="VisitPipeline",
                ),
                migrations.DeleteModel(
                    name="VisitReference",
                ),
                migrations.DeleteModel(
                    name="VisitSubmission",
                ),
                migrations.DeleteModel(
                    name="VisitTask",
                ),
                migrations.DeleteModel(
                    name="VLindBench",
                ),
                migrations.DeleteModel(
                    name="VLindConcept",
                ),
                migrations.DeleteModel(
                    name="VLindImage",
                ),
                migrations.DeleteModel(
                    name="VLindTriple",
                ),
                migrations.DeleteModel(
                    name="VQAItem",
                ),
            ],
        ),
    ]

"""VHExpansion's models as they were in the ``curation`` app (curation 0008 lets them go): the
same tables (``db_table`` kept), taken up in the state only. The content types move with them,
so permissions and admin history keep pointing at the same rows."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


MODELS = ["vhcaseset", "vhcase", "vhnegation", "vhvariant"]


def content_types_move(
    apps, schema_editor, *, source: str = "curation", target: str = "vhexpansion"
):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.using(schema_editor.connection.alias).filter(
        app_label=source, model__in=MODELS
    ).update(app_label=target)


def content_types_back(apps, schema_editor):
    content_types_move(apps, schema_editor, source="vhexpansion", target="curation")


class Migration(migrations.Migration):
    initial = True

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("annotator", "0004_job_heartbeat"),
        ("curation", "0008_recipes_are_apps"),
        ("evaluation", "0005_benchmark_family_registry"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="VHCaseSet",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("name", models.CharField(max_length=200)),
                        ("description", models.TextField(blank=True)),
                        (
                            "source",
                            models.CharField(
                                blank=True, help_text="File or benchmark.", max_length=255
                            ),
                        ),
                        (
                            "max_attempts",
                            models.PositiveSmallIntegerField(
                                default=3,
                                help_text="Negations drafted per case before a case is dropped.",
                            ),
                        ),
                        (
                            "benchmark",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="evaluation.benchmark",
                            ),
                        ),
                        (
                            "created_by",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "project",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="annotator.project",
                            ),
                        ),
                        (
                            "review_queue",
                            models.ForeignKey(
                                blank=True,
                                help_text="The review queue people check the negations in.",
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="annotator.taskqueue",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_vhcaseset",
                        "ordering": ["-created_at", "-id"],
                        "abstract": False,
                    },
                ),
                migrations.CreateModel(
                    name="VHCase",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("external_id", models.CharField(max_length=200)),
                        ("position", models.PositiveIntegerField()),
                        ("question", models.TextField()),
                        (
                            "answer",
                            models.CharField(choices=[("yes", "Yes"), ("no", "No")], max_length=3),
                        ),
                        ("source_dataset", models.CharField(blank=True, max_length=100)),
                        ("category", models.CharField(blank=True, max_length=100)),
                        ("triggers_vh", models.BooleanField(blank=True, null=True)),
                        (
                            "negation_state",
                            models.CharField(
                                choices=[
                                    ("pending", "Not drafted yet"),
                                    ("review", "In review"),
                                    ("accepted", "Accepted"),
                                    ("dropped", "Dropped"),
                                    ("failed", "Drafting failed"),
                                ],
                                default="pending",
                                max_length=8,
                            ),
                        ),
                        ("negation_error", models.TextField(blank=True)),
                        (
                            "image",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="curation.image",
                            ),
                        ),
                        (
                            "case_set",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="cases",
                                to="vhexpansion.vhcaseset",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_vhcase",
                        "ordering": ["case_set", "position"],
                    },
                ),
                migrations.CreateModel(
                    name="VHNegation",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("votes", models.JSONField(blank=True, default=dict)),
                        ("decided_at", models.DateTimeField(blank=True, null=True)),
                        ("attempt", models.PositiveSmallIntegerField()),
                        ("question", models.TextField()),
                        (
                            "answer",
                            models.CharField(choices=[("yes", "Yes"), ("no", "No")], max_length=3),
                        ),
                        ("fallback", models.BooleanField(default=False)),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("review", "In review"),
                                    ("accepted", "Accepted"),
                                    ("rejected", "Rejected"),
                                    ("discarded", "Discarded (not a new question)"),
                                ],
                                default="review",
                                max_length=9,
                            ),
                        ),
                        ("note", models.CharField(blank=True, max_length=300)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "case",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="negations",
                                to="vhexpansion.vhcase",
                            ),
                        ),
                        (
                            "generation",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="curation.generation",
                            ),
                        ),
                        (
                            "task",
                            models.OneToOneField(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="annotator.task",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_vhnegation",
                        "ordering": ["case", "attempt"],
                    },
                ),
                migrations.CreateModel(
                    name="VHVariant",
                    fields=[
                        (
                            "id",
                            models.BigAutoField(
                                auto_created=True,
                                primary_key=True,
                                serialize=False,
                                verbose_name="ID",
                            ),
                        ),
                        ("perturbation", models.CharField(max_length=40)),
                        (
                            "kind",
                            models.CharField(
                                choices=[
                                    ("common", "Common perturbation"),
                                    ("adversarial", "Adversarial perturbation"),
                                ],
                                max_length=11,
                            ),
                        ),
                        ("params", models.JSONField(blank=True, default=dict)),
                        ("triggers_vh", models.BooleanField(blank=True, null=True)),
                        ("final_cosine", models.FloatField(blank=True, null=True)),
                        ("linf", models.FloatField(blank=True, null=True)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "case",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="variants",
                                to="vhexpansion.vhcase",
                            ),
                        ),
                        (
                            "image",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="curation.image",
                            ),
                        ),
                        (
                            "job",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="annotator.job",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_vhvariant",
                        "ordering": ["case", "perturbation"],
                    },
                ),
                migrations.AddConstraint(
                    model_name="vhcaseset",
                    constraint=models.UniqueConstraint(
                        fields=("project", "name"), name="vhcaseset_project_name_uniq"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="vhcaseset",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("max_attempts__gte", 1)),
                        name="vhcaseset_max_attempts_gte_1",
                    ),
                ),
                migrations.AddIndex(
                    model_name="vhcase",
                    index=models.Index(
                        fields=["case_set", "negation_state"], name="vhcase_state_idx"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="vhcase",
                    constraint=models.UniqueConstraint(
                        fields=("case_set", "external_id"), name="vhcase_external_id_uniq"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="vhcase",
                    constraint=models.UniqueConstraint(
                        fields=("case_set", "position"), name="vhcase_position_uniq"
                    ),
                ),
                migrations.AddIndex(
                    model_name="vhnegation",
                    index=models.Index(fields=["status"], name="vhnegation_status_idx"),
                ),
                migrations.AddConstraint(
                    model_name="vhnegation",
                    constraint=models.UniqueConstraint(
                        fields=("case", "attempt"), name="vhnegation_attempt_uniq"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="vhnegation",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("status", "accepted")),
                        fields=("case",),
                        name="vhnegation_one_accepted",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="vhnegation",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("attempt__gte", 1)), name="vhnegation_attempt_gte_1"
                    ),
                ),
                migrations.AddIndex(
                    model_name="vhvariant",
                    index=models.Index(fields=["perturbation"], name="vhvariant_perturbation_idx"),
                ),
                migrations.AddConstraint(
                    model_name="vhvariant",
                    constraint=models.UniqueConstraint(
                        fields=("case", "perturbation"), name="vhvariant_uniq"
                    ),
                ),
            ],
        ),
        migrations.RunPython(content_types_move, content_types_back),
    ]

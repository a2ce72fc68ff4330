"""VLind-Bench's models as they were in the ``curation`` app (curation 0008 lets them go): the
same tables (``db_table`` kept), taken up in the state only. The content types move with them,
so permissions and admin history keep pointing at the same rows."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


MODELS = ["vlindbench", "vlindconcept", "vlindimage", "vlindtriple"]


def content_types_move(apps, schema_editor, *, source: str = "curation", target: str = "vlind"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.using(schema_editor.connection.alias).filter(
        app_label=source, model__in=MODELS
    ).update(app_label=target)


def content_types_back(apps, schema_editor):
    content_types_move(apps, schema_editor, source="vlind", target="curation")


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
                    name="VLindBench",
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
                            "triples_per_concept",
                            models.PositiveSmallIntegerField(
                                default=50,
                                help_text="Instance triples the LLM drafts per concept (Sec. 4: 50).",
                            ),
                        ),
                        (
                            "images_per_style",
                            models.PositiveSmallIntegerField(
                                default=4,
                                help_text="Counterfactual images per style (Sec. 4: four of each).",
                            ),
                        ),
                        (
                            "image_model",
                            models.CharField(blank=True, default="dall-e-3", max_length=200),
                        ),
                        ("image_size", models.CharField(default="1024x1024", max_length=20)),
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
                            "image_provider",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="curation.llmprovider",
                            ),
                        ),
                        (
                            "image_queue",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="annotator.taskqueue",
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
                            "triple_queue",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="annotator.taskqueue",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_vlindbench",
                        "ordering": ["-created_at", "-id"],
                        "abstract": False,
                    },
                ),
                migrations.CreateModel(
                    name="VLindConcept",
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
                        ("name", models.CharField(max_length=40)),
                        ("description", models.CharField(blank=True, max_length=300)),
                        ("image_hint", models.CharField(max_length=300)),
                        ("examples", models.JSONField(default=list)),
                        ("position", models.PositiveSmallIntegerField(default=0)),
                        ("active", models.BooleanField(default=True)),
                        (
                            "bench",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="concepts",
                                to="vlind.vlindbench",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_vlindconcept",
                        "ordering": ["bench", "position", "name"],
                    },
                ),
                migrations.CreateModel(
                    name="VLindImage",
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
                        ("votes", models.JSONField(blank=True, default=dict)),
                        ("decided_at", models.DateTimeField(blank=True, null=True)),
                        ("accepts", models.PositiveSmallIntegerField(default=0)),
                        ("slot", models.PositiveSmallIntegerField()),
                        (
                            "style",
                            models.CharField(
                                choices=[
                                    ("photorealistic", "Photorealistic"),
                                    ("illustration", "Illustration"),
                                    ("cartoon", "Cartoon"),
                                ],
                                max_length=14,
                            ),
                        ),
                        (
                            "origin",
                            models.CharField(
                                choices=[
                                    ("upload", "Uploaded"),
                                    ("generated", "Generated"),
                                    ("placeholder", "Placeholder (demo)"),
                                ],
                                max_length=11,
                            ),
                        ),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("review", "In review"),
                                    ("good", "Good"),
                                    ("bad", "Rejected"),
                                ],
                                default="review",
                                max_length=6,
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
                            "image",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="curation.image",
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
                        "db_table": "curation_vlindimage",
                        "ordering": ["triple", "slot"],
                    },
                ),
                migrations.CreateModel(
                    name="VLindTriple",
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
                        ("accepts", models.PositiveSmallIntegerField(default=0)),
                        ("context_id", models.PositiveIntegerField()),
                        ("context", models.TextField()),
                        ("true_statement", models.TextField()),
                        ("false_statement", models.TextField()),
                        ("factual_context", models.TextField(blank=True)),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("review", "In review"),
                                    ("kept", "Kept"),
                                    ("rejected", "Rejected"),
                                ],
                                default="review",
                                max_length=8,
                            ),
                        ),
                        ("noun_candidates", models.JSONField(blank=True, default=dict)),
                        ("existent_noun", models.CharField(blank=True, max_length=100)),
                        ("non_existent_noun", models.CharField(blank=True, max_length=100)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "bench",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="triples",
                                to="vlind.vlindbench",
                            ),
                        ),
                        (
                            "best_image",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="vlind.vlindimage",
                            ),
                        ),
                        (
                            "concept",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="triples",
                                to="vlind.vlindconcept",
                            ),
                        ),
                        (
                            "factual_image",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="curation.image",
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
                            "noun_generation",
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
                        "db_table": "curation_vlindtriple",
                        "ordering": ["concept__position", "context_id"],
                    },
                ),
                migrations.AddField(
                    model_name="vlindimage",
                    name="triple",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="images",
                        to="vlind.vlindtriple",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="vlindbench",
                    constraint=models.UniqueConstraint(
                        fields=("project", "name"), name="vlindbench_project_name_uniq"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="vlindbench",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            ("images_per_style__gte", 1), ("images_per_style__lte", 4)
                        ),
                        name="vlindbench_images_per_style_1_4",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="vlindbench",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("triples_per_concept__gte", 1)),
                        name="vlindbench_triples_gte_1",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="vlindconcept",
                    constraint=models.UniqueConstraint(
                        fields=("bench", "name"), name="vlindconcept_name_uniq"
                    ),
                ),
                migrations.AddIndex(
                    model_name="vlindtriple",
                    index=models.Index(fields=["bench", "status"], name="vlindtriple_status_idx"),
                ),
                migrations.AddConstraint(
                    model_name="vlindtriple",
                    constraint=models.UniqueConstraint(
                        fields=("concept", "context_id"), name="vlindtriple_context_id_uniq"
                    ),
                ),
                migrations.AddIndex(
                    model_name="vlindimage",
                    index=models.Index(fields=["status"], name="vlindimage_status_idx"),
                ),
                migrations.AddConstraint(
                    model_name="vlindimage",
                    constraint=models.UniqueConstraint(
                        fields=("triple", "slot"), name="vlindimage_slot_uniq"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="vlindimage",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("slot__lte", 11)), name="vlindimage_slot_lte_11"
                    ),
                ),
            ],
        ),
        migrations.RunPython(content_types_move, content_types_back),
    ]

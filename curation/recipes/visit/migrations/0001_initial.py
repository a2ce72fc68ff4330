"""VisIT-Bench's models as they were in the ``curation`` app (curation 0008 lets them go): the
same tables (``db_table`` kept), taken up in the state only. The content types move with them,
so permissions and admin history keep pointing at the same rows."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


MODELS = [
    "visitfamily",
    "visitinstance",
    "visitimage",
    "visitpipeline",
    "visitpair",
    "visitreference",
    "visitsubmission",
    "visittask",
]


def content_types_move(apps, schema_editor, *, source: str = "curation", target: str = "visit"):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.using(schema_editor.connection.alias).filter(
        app_label=source, model__in=MODELS
    ).update(app_label=target)


def content_types_back(apps, schema_editor):
    content_types_move(apps, schema_editor, source="visit", target="curation")


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
                    name="VisitFamily",
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
                        ("multi_image", models.BooleanField(default=False)),
                        (
                            "origin",
                            models.CharField(
                                choices=[
                                    ("authored", "Created by a curator"),
                                    ("imported", "Imported (category of the published dataset)"),
                                ],
                                default="authored",
                                max_length=8,
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
                    ],
                    options={
                        "verbose_name_plural": "visit families",
                        "db_table": "curation_visitfamily",
                        "ordering": ["name", "id"],
                    },
                ),
                migrations.CreateModel(
                    name="VisitInstance",
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
                        (
                            "origin",
                            models.CharField(
                                choices=[
                                    ("seed", "Seed example"),
                                    ("crowd", "Written by a crowdworker"),
                                    ("imported", "Imported"),
                                ],
                                max_length=8,
                            ),
                        ),
                        (
                            "state",
                            models.CharField(
                                choices=[
                                    ("seed", "Seed example"),
                                    ("captioning", "Waiting for captions"),
                                    ("drafting", "Waiting for the reference draft"),
                                    ("verifying", "Reference in review"),
                                    ("verified", "Verified"),
                                    ("discarded", "Discarded"),
                                ],
                                max_length=10,
                            ),
                        ),
                        ("external_id", models.CharField(blank=True, max_length=200)),
                        ("position", models.PositiveIntegerField(default=0)),
                        ("instruction", models.TextField()),
                        ("caption", models.TextField(blank=True)),
                        ("caption_round", models.PositiveSmallIntegerField(default=1)),
                        ("draft_error", models.TextField(blank=True)),
                        ("metadata", models.JSONField(blank=True, default=dict)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "author",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to=settings.AUTH_USER_MODEL,
                            ),
                        ),
                        (
                            "family",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="instances",
                                to="visit.visitfamily",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_visitinstance",
                        "ordering": ["pipeline", "position", "id"],
                    },
                ),
                migrations.CreateModel(
                    name="VisitImage",
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
                        ("position", models.PositiveSmallIntegerField(default=0)),
                        ("url", models.CharField(blank=True, max_length=2000)),
                        ("caption", models.TextField(blank=True)),
                        ("fetch_error", models.CharField(blank=True, max_length=300)),
                        (
                            "image",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="curation.image",
                            ),
                        ),
                        (
                            "instance",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="images",
                                to="visit.visitinstance",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_visitimage",
                        "ordering": ["instance", "position"],
                    },
                ),
                migrations.CreateModel(
                    name="VisitPipeline",
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
                            "caption_min_length",
                            models.PositiveSmallIntegerField(
                                default=80,
                                help_text="Shortest instruction-conditioned caption accepted (characters).",
                            ),
                        ),
                        (
                            "max_caption_rounds",
                            models.PositiveSmallIntegerField(
                                default=2,
                                help_text="A caption sent back by a reviewer is rewritten at most this many times.",
                            ),
                        ),
                        (
                            "votes_per_pair",
                            models.PositiveSmallIntegerField(
                                default=5,
                                help_text="Crowd judgments per (instance, model A, model B) tuple.",
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
                            "caption_queue",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="annotator.taskqueue",
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
                            "human_set",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="evaluation.judgmentset",
                            ),
                        ),
                        (
                            "instruction_queue",
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
                            "provider",
                            models.ForeignKey(
                                blank=True,
                                help_text="Drafts the references (empty: the project's default, else offline).",
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="curation.llmprovider",
                            ),
                        ),
                        (
                            "rating_queue",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="annotator.taskqueue",
                            ),
                        ),
                        (
                            "review_queue",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="annotator.taskqueue",
                            ),
                        ),
                        (
                            "version",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="evaluation.benchmarkversion",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_visitpipeline",
                        "ordering": ["-created_at", "-id"],
                        "abstract": False,
                    },
                ),
                migrations.CreateModel(
                    name="VisitPair",
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
                        ("model_a", models.CharField(max_length=200)),
                        ("model_b", models.CharField(max_length=200)),
                        ("pair_key", models.CharField(max_length=401)),
                        ("response_a", models.TextField(blank=True)),
                        ("response_b", models.TextField(blank=True)),
                        ("votes_a", models.PositiveSmallIntegerField(default=0)),
                        ("votes_b", models.PositiveSmallIntegerField(default=0)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("item_id", models.CharField(max_length=200)),
                        ("winner", models.CharField(blank=True, max_length=200)),
                        ("seed", models.BigIntegerField(default=0)),
                        ("decided_at", models.DateTimeField(blank=True, null=True)),
                        (
                            "instance",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="visit.visitinstance",
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
                        (
                            "version",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.RESTRICT,
                                related_name="+",
                                to="evaluation.benchmarkversion",
                            ),
                        ),
                        (
                            "pipeline",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="pairs",
                                to="visit.visitpipeline",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_visitpair",
                        "ordering": ["pipeline", "id"],
                    },
                ),
                migrations.AddField(
                    model_name="visitinstance",
                    name="pipeline",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="instances",
                        to="visit.visitpipeline",
                    ),
                ),
                migrations.AddField(
                    model_name="visitfamily",
                    name="pipeline",
                    field=models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="families",
                        to="visit.visitpipeline",
                    ),
                ),
                migrations.CreateModel(
                    name="VisitReference",
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
                        ("round", models.PositiveSmallIntegerField(default=1)),
                        ("text", models.TextField()),
                        (
                            "source",
                            models.CharField(
                                choices=[
                                    ("llm", "LLM draft"),
                                    ("imported", "Published GPT-4 response"),
                                    ("seed", "Seed example response"),
                                ],
                                max_length=8,
                            ),
                        ),
                        ("offline", models.BooleanField(default=False)),
                        (
                            "verdict",
                            models.CharField(
                                choices=[
                                    ("pending", "In review"),
                                    ("correct", "Correct"),
                                    ("caption", "Problem in the caption"),
                                    ("response", "Problem in the response"),
                                    ("incorrect", "Incorrect (no reason given)"),
                                ],
                                default="pending",
                                max_length=9,
                            ),
                        ),
                        ("comments", models.JSONField(blank=True, default=list)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
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
                            "instance",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="references",
                                to="visit.visitinstance",
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
                        "db_table": "curation_visitreference",
                        "ordering": ["instance", "round"],
                    },
                ),
                migrations.CreateModel(
                    name="VisitSubmission",
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
                        ("model_name", models.CharField(max_length=200)),
                        ("filename", models.CharField(blank=True, max_length=255)),
                        ("format", models.CharField(max_length=5)),
                        ("rows", models.PositiveIntegerField(default=0)),
                        ("judgment_set_label", models.CharField(max_length=120)),
                        ("seed", models.BigIntegerField(default=0)),
                        ("reference_pairs", models.PositiveIntegerField(default=150)),
                        ("pairs", models.JSONField(blank=True, default=list)),
                        (
                            "status",
                            models.CharField(
                                choices=[("judging", "Being judged"), ("failed", "Failed")],
                                default="judging",
                                max_length=8,
                            ),
                        ),
                        ("error", models.TextField(blank=True)),
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
                            "judge_job",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="annotator.job",
                            ),
                        ),
                        (
                            "pipeline",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="submissions",
                                to="visit.visitpipeline",
                            ),
                        ),
                        (
                            "run",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="evaluation.modelrun",
                            ),
                        ),
                        (
                            "version",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.RESTRICT,
                                related_name="+",
                                to="evaluation.benchmarkversion",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_visitsubmission",
                        "ordering": ["-created_at", "-id"],
                        "abstract": False,
                    },
                ),
                migrations.CreateModel(
                    name="VisitTask",
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
                        (
                            "stage",
                            models.CharField(
                                choices=[
                                    ("instruction", "Instruction generation"),
                                    ("caption", "Instruction-conditioned caption"),
                                ],
                                max_length=11,
                            ),
                        ),
                        ("round", models.PositiveSmallIntegerField(default=1)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "family",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="visit.visitfamily",
                            ),
                        ),
                        (
                            "image",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="visit.visitimage",
                            ),
                        ),
                        (
                            "pipeline",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="visit.visitpipeline",
                            ),
                        ),
                        (
                            "task",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="+",
                                to="annotator.task",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_visittask",
                    },
                ),
                migrations.AddConstraint(
                    model_name="visitimage",
                    constraint=models.UniqueConstraint(
                        fields=("instance", "position"), name="visitimage_pos_uniq"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="visitimage",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            ("image__isnull", False),
                            models.Q(("url", ""), _negated=True),
                            _connector="OR",
                        ),
                        name="visitimage_has_source",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="visitpipeline",
                    constraint=models.UniqueConstraint(
                        fields=("project", "name"), name="visitpipeline_name_uniq"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="visitpipeline",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("votes_per_pair__gte", 1)),
                        name="visitpipeline_votes_gte_1",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="visitpipeline",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("caption_min_length__gte", 1)),
                        name="visitpipeline_caption_min_gte_1",
                    ),
                ),
                migrations.AddIndex(
                    model_name="visitpair",
                    index=models.Index(
                        fields=["pipeline", "decided_at"], name="visitpair_decided_idx"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="visitpair",
                    constraint=models.UniqueConstraint(
                        fields=("pipeline", "version_id", "item_id", "pair_key"),
                        name="visitpair_uniq",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="visitpair",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("model_a", models.F("model_b")), _negated=True),
                        name="visitpair_two",
                    ),
                ),
                migrations.AddIndex(
                    model_name="visitinstance",
                    index=models.Index(
                        fields=["pipeline", "state"], name="visitinstance_state_idx"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="visitinstance",
                    constraint=models.UniqueConstraint(
                        condition=models.Q(("external_id", ""), _negated=True),
                        fields=("pipeline", "external_id"),
                        name="visitinstance_external_id_uniq",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="visitinstance",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("caption_round__gte", 1)),
                        name="visitinstance_round_gte_1",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="visitfamily",
                    constraint=models.UniqueConstraint(
                        fields=("pipeline", "name"), name="visitfamily_name_uniq"
                    ),
                ),
                migrations.AddIndex(
                    model_name="visitreference",
                    index=models.Index(fields=["verdict"], name="visitreference_verdict_idx"),
                ),
                migrations.AddConstraint(
                    model_name="visitreference",
                    constraint=models.UniqueConstraint(
                        fields=("instance", "round"), name="visitreference_round_uniq"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="visitsubmission",
                    constraint=models.UniqueConstraint(
                        fields=("pipeline", "version_id", "model_name"),
                        name="visitsubmission_model_uniq",
                    ),
                ),
                migrations.AddIndex(
                    model_name="visittask",
                    index=models.Index(fields=["pipeline", "stage"], name="visittask_stage_idx"),
                ),
                migrations.AddConstraint(
                    model_name="visittask",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            models.Q(("stage", "instruction"), ("family__isnull", False)),
                            models.Q(("stage", "caption"), ("image__isnull", False)),
                            _connector="OR",
                        ),
                        name="visittask_stage_target",
                    ),
                ),
            ],
        ),
        migrations.RunPython(content_types_move, content_types_back),
    ]

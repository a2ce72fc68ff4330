"""NaturalBench's models as they were in the ``curation`` app (curation 0008 lets them go): the
same tables (``db_table`` kept), taken up in the state only. The content types move with them,
so permissions and admin history keep pointing at the same rows."""

import curation.recipes.naturalbench.models
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


MODELS = [
    "naturalbenchpipeline",
    "confoundingpair",
    "naturalbenchversion",
    "pairquestionset",
    "questiondraft",
    "naturalbenchsample",
    "vqaitem",
]


def content_types_move(
    apps, schema_editor, *, source: str = "curation", target: str = "naturalbench"
):
    ContentType = apps.get_model("contenttypes", "ContentType")
    ContentType.objects.using(schema_editor.connection.alias).filter(
        app_label=source, model__in=MODELS
    ).update(app_label=target)


def content_types_back(apps, schema_editor):
    content_types_move(apps, schema_editor, source="naturalbench", target="curation")


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
                    name="NaturalBenchPipeline",
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
                        (
                            "method",
                            models.CharField(
                                choices=[
                                    ("eq1", "Mismatches of every selected scorer (Eq. 1)"),
                                    ("random", "Random pairs (Flickr-Random baseline, Table 6)"),
                                ],
                                default="eq1",
                                max_length=8,
                            ),
                        ),
                        ("question_types", models.JSONField(default=list)),
                        (
                            "language",
                            models.CharField(
                                default="en",
                                help_text="Captions in this language are paired.",
                                max_length=35,
                            ),
                        ),
                        (
                            "caption_max_chars",
                            models.PositiveIntegerField(
                                blank=True,
                                help_text="Shorten longer captions through the LLM before scoring (DOCCI: 230).",
                                null=True,
                            ),
                        ),
                        ("annotators_per_item", models.PositiveSmallIntegerField(default=2)),
                        ("taggers_per_item", models.PositiveSmallIntegerField(default=3)),
                        ("max_regenerations", models.PositiveSmallIntegerField(default=3)),
                        (
                            "random_pairs",
                            models.PositiveIntegerField(
                                blank=True,
                                help_text="Random baseline only: how many pairs (empty: all).",
                                null=True,
                            ),
                        ),
                        ("seed", models.PositiveIntegerField(default=0)),
                        (
                            "auto_regenerate",
                            models.BooleanField(
                                default=True,
                                help_text="Draft a pair's questions again as soon as one of its items fails.",
                            ),
                        ),
                        ("mining", models.JSONField(blank=True, default=dict)),
                        (
                            "demo",
                            models.BooleanField(
                                default=False,
                                help_text="Made by the demo: offline drafter, random-weights scorer.",
                            ),
                        ),
                        (
                            "answer_queue",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="annotator.taskqueue",
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
                            "corpus",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="curation.corpus",
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
                            "pair_queue",
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
                                help_text="Drafts questions and shortens captions (empty: the project's default).",
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="curation.llmprovider",
                            ),
                        ),
                        (
                            "scorers",
                            models.ManyToManyField(
                                blank=True,
                                db_table="curation_naturalbenchpipeline_scorers",
                                related_name="+",
                                to="curation.scorer",
                            ),
                        ),
                        (
                            "tag_queue",
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
                        "db_table": "curation_naturalbenchpipeline",
                        "ordering": ["-created_at", "-id"],
                        "abstract": False,
                    },
                ),
                migrations.CreateModel(
                    name="ConfoundingPair",
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
                        ("position", models.PositiveIntegerField()),
                        ("scores", models.JSONField(blank=True, default=list)),
                        (
                            "state",
                            models.CharField(
                                choices=[
                                    ("mined", "Mined"),
                                    ("review", "In verification"),
                                    ("verified", "Verified"),
                                    ("discarded", "Discarded"),
                                ],
                                default="mined",
                                max_length=9,
                            ),
                        ),
                        ("agreement", models.FloatField(blank=True, null=True)),
                        (
                            "caption_0",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="curation.caption",
                            ),
                        ),
                        (
                            "caption_1",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="curation.caption",
                            ),
                        ),
                        (
                            "sample_0",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="curation.sample",
                            ),
                        ),
                        (
                            "sample_1",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="curation.sample",
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
                            "pipeline",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="pairs",
                                to="naturalbench.naturalbenchpipeline",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_confoundingpair",
                        "ordering": ["pipeline", "position"],
                    },
                ),
                migrations.CreateModel(
                    name="NaturalBenchVersion",
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
                        ("label", models.CharField(max_length=60)),
                        ("sha256", models.CharField(max_length=64)),
                        ("sample_count", models.PositiveIntegerField()),
                        ("card", models.JSONField(default=dict)),
                        (
                            "archive",
                            models.FileField(
                                max_length=255,
                                upload_to=curation.recipes.naturalbench.models.export_upload_to,
                            ),
                        ),
                        ("archive_sha256", models.CharField(max_length=64)),
                        (
                            "parquet",
                            models.FileField(
                                blank=True,
                                max_length=255,
                                upload_to=curation.recipes.naturalbench.models.export_upload_to,
                            ),
                        ),
                        ("parquet_sha256", models.CharField(blank=True, max_length=64)),
                        (
                            "benchmark_version",
                            models.ForeignKey(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="evaluation.benchmarkversion",
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
                            "job",
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
                                related_name="versions",
                                to="naturalbench.naturalbenchpipeline",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_naturalbenchversion",
                        "ordering": ["pipeline", "-created_at", "-id"],
                    },
                ),
                migrations.CreateModel(
                    name="PairQuestionSet",
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
                            "question_type",
                            models.CharField(
                                choices=[
                                    ("yes_no", "Yes-or-No"),
                                    ("multiple_choice", "Multiple-Choice"),
                                ],
                                max_length=16,
                            ),
                        ),
                        (
                            "state",
                            models.CharField(
                                choices=[
                                    ("pending", "Waiting for a draft"),
                                    ("answering", "Being answered"),
                                    ("kept", "Kept"),
                                    ("given_up", "Given up"),
                                ],
                                default="pending",
                                max_length=9,
                            ),
                        ),
                        ("attempts", models.PositiveSmallIntegerField(default=0)),
                        (
                            "reason",
                            models.TextField(
                                blank=True, help_text="Why the last draft failed or why we gave up."
                            ),
                        ),
                        ("updated_at", models.DateTimeField(auto_now=True)),
                        (
                            "pair",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="question_sets",
                                to="naturalbench.confoundingpair",
                            ),
                        ),
                        (
                            "pipeline",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="question_sets",
                                to="naturalbench.naturalbenchpipeline",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_pairquestionset",
                        "ordering": ["pipeline", "pair", "question_type"],
                    },
                ),
                migrations.CreateModel(
                    name="QuestionDraft",
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
                        ("attempt", models.PositiveSmallIntegerField()),
                        (
                            "status",
                            models.CharField(
                                choices=[
                                    ("invalid", "Invalid output"),
                                    ("answering", "Being answered"),
                                    ("kept", "Kept"),
                                    ("rejected", "Rejected by annotators"),
                                ],
                                max_length=9,
                            ),
                        ),
                        ("problems", models.JSONField(blank=True, default=list)),
                        ("question_0", models.TextField(blank=True)),
                        ("question_1", models.TextField(blank=True)),
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
                            "question_set",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="drafts",
                                to="naturalbench.pairquestionset",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_questiondraft",
                        "ordering": ["question_set", "attempt"],
                    },
                ),
                migrations.CreateModel(
                    name="NaturalBenchSample",
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
                        ("index", models.PositiveIntegerField(blank=True, null=True)),
                        (
                            "state",
                            models.CharField(
                                choices=[("assembled", "Assembled"), ("refused", "Refused")],
                                max_length=9,
                            ),
                        ),
                        (
                            "question_type",
                            models.CharField(
                                choices=[
                                    ("yes_no", "Yes-or-No"),
                                    ("multiple_choice", "Multiple-Choice"),
                                ],
                                max_length=16,
                            ),
                        ),
                        ("record", models.JSONField(blank=True, default=dict)),
                        ("problems", models.JSONField(blank=True, default=list)),
                        ("skills", models.JSONField(blank=True, default=list)),
                        ("tag_agreement", models.JSONField(blank=True, default=list)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        (
                            "image_0",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="curation.image",
                            ),
                        ),
                        (
                            "image_1",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="+",
                                to="curation.image",
                            ),
                        ),
                        (
                            "pipeline",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="samples",
                                to="naturalbench.naturalbenchpipeline",
                            ),
                        ),
                        (
                            "tag_task_0",
                            models.OneToOneField(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="annotator.task",
                            ),
                        ),
                        (
                            "tag_task_1",
                            models.OneToOneField(
                                blank=True,
                                null=True,
                                on_delete=django.db.models.deletion.SET_NULL,
                                related_name="+",
                                to="annotator.task",
                            ),
                        ),
                        (
                            "draft",
                            models.OneToOneField(
                                on_delete=django.db.models.deletion.PROTECT,
                                related_name="sample",
                                to="naturalbench.questiondraft",
                            ),
                        ),
                    ],
                    options={
                        "db_table": "curation_naturalbenchsample",
                        "ordering": ["pipeline", "index", "id"],
                    },
                ),
                migrations.CreateModel(
                    name="VQAItem",
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
                        ("key", models.CharField(max_length=5)),
                        ("question", models.TextField()),
                        ("choices", models.JSONField(default=list)),
                        (
                            "intended",
                            models.CharField(
                                help_text="The choice people should pick.", max_length=500
                            ),
                        ),
                        ("answer", models.CharField(max_length=3)),
                        (
                            "state",
                            models.CharField(
                                choices=[
                                    ("open", "Being answered"),
                                    ("correct", "Answered as intended"),
                                    ("failed", "Failed"),
                                ],
                                default="open",
                                max_length=7,
                            ),
                        ),
                        (
                            "draft",
                            models.ForeignKey(
                                on_delete=django.db.models.deletion.CASCADE,
                                related_name="items",
                                to="naturalbench.questiondraft",
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
                        "db_table": "curation_vqaitem",
                        "ordering": ["draft", "key"],
                    },
                ),
                migrations.AddConstraint(
                    model_name="naturalbenchpipeline",
                    constraint=models.UniqueConstraint(
                        fields=("project", "name"), name="nbpipeline_project_name_uniq"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="naturalbenchpipeline",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("annotators_per_item__gte", 1)),
                        name="nbpipeline_annotators_gte_1",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="naturalbenchpipeline",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("taggers_per_item__gte", 1)),
                        name="nbpipeline_taggers_gte_1",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="naturalbenchpipeline",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("max_regenerations__lte", 10)),
                        name="nbpipeline_max_regen_lte_10",
                    ),
                ),
                migrations.AddIndex(
                    model_name="confoundingpair",
                    index=models.Index(fields=["pipeline", "state"], name="nbpair_state_idx"),
                ),
                migrations.AddConstraint(
                    model_name="confoundingpair",
                    constraint=models.UniqueConstraint(
                        fields=("pipeline", "position"), name="nbpair_position_uniq"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="confoundingpair",
                    constraint=models.UniqueConstraint(
                        fields=("pipeline", "sample_0", "sample_1"), name="nbpair_samples_uniq"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="confoundingpair",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("sample_0", models.F("sample_1")), _negated=True),
                        name="nbpair_two_samples",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="naturalbenchversion",
                    constraint=models.UniqueConstraint(
                        fields=("pipeline", "label"), name="nbversion_label_uniq"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="naturalbenchversion",
                    constraint=models.UniqueConstraint(
                        fields=("pipeline", "sha256"), name="nbversion_sha_uniq"
                    ),
                ),
                migrations.AddIndex(
                    model_name="pairquestionset",
                    index=models.Index(fields=["pipeline", "state"], name="nbqset_state_idx"),
                ),
                migrations.AddConstraint(
                    model_name="pairquestionset",
                    constraint=models.UniqueConstraint(
                        fields=("pair", "question_type"), name="nbqset_pair_type_uniq"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="questiondraft",
                    constraint=models.UniqueConstraint(
                        fields=("question_set", "attempt"), name="nbdraft_attempt_uniq"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="questiondraft",
                    constraint=models.CheckConstraint(
                        condition=models.Q(("attempt__gte", 1)), name="nbdraft_attempt_gte_1"
                    ),
                ),
                migrations.AddIndex(
                    model_name="naturalbenchsample",
                    index=models.Index(fields=["pipeline", "state"], name="nbsample_state_idx"),
                ),
                migrations.AddConstraint(
                    model_name="naturalbenchsample",
                    constraint=models.UniqueConstraint(
                        fields=("pipeline", "index"), name="nbsample_index_uniq"
                    ),
                ),
                migrations.AddConstraint(
                    model_name="naturalbenchsample",
                    constraint=models.CheckConstraint(
                        condition=models.Q(
                            ("state", "refused"), ("index__isnull", False), _connector="OR"
                        ),
                        name="nbsample_assembled_has_index",
                    ),
                ),
                migrations.AddConstraint(
                    model_name="vqaitem",
                    constraint=models.UniqueConstraint(
                        fields=("draft", "key"), name="nbitem_draft_key_uniq"
                    ),
                ),
            ],
        ),
        migrations.RunPython(content_types_move, content_types_back),
    ]

"""Drop the single-column indexes Django made for five foreign keys; composite indexes lead
with the same column (task_queue_state_idx, assignment_one_per_person, assignment_queue_idx,
annotation_one_per_person, annotation_queue_person_idx).

With a new queue's statistics lagging behind its rows, the planner took the plain queue index
for the claim (sorting every task of the queue on each claim) and for the standing check
(filtering every assignment of the queue). Only the indexes go: the foreign keys stay as they
are, so nothing is re-validated.
"""

import django.db.models.deletion
from django.db import migrations, models

INDEXES = {
    "annotator_task_queue_id_09b76e79": ("annotator_task", "queue_id"),
    "annotator_assignment_task_id_e573b956": ("annotator_assignment", "task_id"),
    "annotator_assignment_queue_id_d62aa8c1": ("annotator_assignment", "queue_id"),
    "annotator_annotation_task_id_36fecb83": ("annotator_annotation", "task_id"),
    "annotator_annotation_queue_id_e340cef8": ("annotator_annotation", "queue_id"),
}


def fk(to: str, related_name: str) -> models.ForeignKey:
    return models.ForeignKey(
        db_index=False,
        on_delete=django.db.models.deletion.CASCADE,
        related_name=related_name,
        to=to,
    )


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0002_role_groups"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField("annotation", "queue", fk("annotator.taskqueue", "+")),
                migrations.AlterField("annotation", "task", fk("annotator.task", "annotations")),
                migrations.AlterField("assignment", "queue", fk("annotator.taskqueue", "+")),
                migrations.AlterField("assignment", "task", fk("annotator.task", "assignments")),
                migrations.AlterField("task", "queue", fk("annotator.taskqueue", "tasks")),
            ],
            database_operations=[
                migrations.RunSQL(
                    f'DROP INDEX IF EXISTS "{name}"',
                    reverse_sql=f'CREATE INDEX "{name}" ON "{table}" ("{column}")',
                )
                for name, (table, column) in INDEXES.items()
            ],
        ),
    ]

"""Every benchmark belongs to a project: those imported without one go to the project
"Unassigned (admins only)" (slug ``unassigned``, no members), made here when needed. Only admins
reach it; an admin moves a benchmark to its real project in the admin site."""

from django.db import migrations

UNASSIGNED_SLUG = "unassigned"
UNASSIGNED_NAME = "Unassigned (admins only)"


def assign_orphans(apps, schema_editor):
    Benchmark = apps.get_model("evaluation", "Benchmark")
    Project = apps.get_model("annotator", "Project")
    orphans = Benchmark.objects.filter(project__isnull=True)
    if not orphans.exists():
        return
    project, _ = Project.objects.get_or_create(
        slug=UNASSIGNED_SLUG,
        defaults={
            "name": UNASSIGNED_NAME,
            "description": "Rows that had no project before projects were required. "
            "Only admins see them; move each to its project.",
        },
    )
    orphans.update(project=project)


class Migration(migrations.Migration):
    dependencies = [
        ("annotator", "0002_role_groups"),
        ("evaluation", "0001_initial_squashed_0002_judgments"),
    ]

    # Backwards: nothing to undo (the benchmarks may stay in the unassigned project).
    operations = [migrations.RunPython(assign_orphans, migrations.RunPython.noop)]

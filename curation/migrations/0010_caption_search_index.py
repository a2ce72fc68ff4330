"""A trigram index for searching a corpus's captions (the hunt's pool search,
``partners.search``: ``UPPER(text) LIKE UPPER('%…%')``). Without it a search that matches
nothing reads every caption: 607 ms at a million, 0.8 ms with it (``benchmarks/hunt_pool.py``).
PostgreSQL only; pg_trgm comes from ``annotator`` 0008."""

from django.db import migrations

INDEX = "caption_text_trgm_idx"


def index_create(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(
            f'CREATE INDEX "{INDEX}" ON "curation_caption" USING gin ((UPPER("text")) gin_trgm_ops)'
        )


def index_drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute(f'DROP INDEX IF EXISTS "{INDEX}"')


class Migration(migrations.Migration):
    dependencies = [
        ("curation", "0009_template_pins"),
        ("annotator", "0008_task_browser_indexes"),
    ]

    operations = [migrations.RunPython(index_create, index_drop)]

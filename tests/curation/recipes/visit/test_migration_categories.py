"""Migration visit 0002 on a populated database: VisIT's instruction families become categories
in code (VisitFamily → VisitCategory on the same table, the ``family`` foreign keys of instances
and instruction tasks → ``category``) and every row reads back with its links."""

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

BEFORE = ("visit", "0001_initial")
AFTER = ("visit", "0002_instruction_categories")


def _populate(apps) -> dict:
    model = apps.get_model
    project = model("annotator", "Project").objects.create(name="Lab", slug="lab")
    queue = model("annotator", "TaskQueue").objects.create(
        project=project, kind="write_text", title="Q"
    )
    task = model("annotator", "Task").objects.create(queue=queue, payload={}, required=1)
    pipeline = model("visit", "VisitPipeline").objects.create(project=project, name="VisIT")
    family = model("visit", "VisitFamily").objects.create(
        pipeline=pipeline, name="Recipes", multi_image=True, origin="imported"
    )
    instance = model("visit", "VisitInstance").objects.create(
        pipeline=pipeline, family=family, origin="imported", state="verified", instruction="Cook"
    )
    link = model("visit", "VisitTask").objects.create(
        task=task, pipeline=pipeline, stage="instruction", family=family
    )
    return {"pipeline": pipeline.pk, "family": family.pk, "instance": instance.pk, "link": link.pk}


@pytest.mark.django_db(transaction=True)
def test_families_are_read_back_as_categories_with_their_links():
    # Given a database at visit 0001 with a family, an instance of it and an instruction task
    # (every other app at its leaf; nothing else depends on visit 0002)
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    others = [n for n in leaves if n[0] != "visit"]
    try:
        executor.migrate([BEFORE, *others])
        ids = _populate(executor.loader.project_state([BEFORE, *others]).apps)

        # When visit 0002 runs
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate([AFTER, *others])
        model = executor.loader.project_state([AFTER, *others]).apps.get_model

        # Then the family is a category on the same table, with its fields,
        category = model("visit", "VisitCategory").objects.get(pk=ids["family"])
        assert model("visit", "VisitCategory")._meta.db_table == "curation_visitfamily"
        assert (category.name, category.multi_image, category.origin) == (
            "Recipes",
            True,
            "imported",
        )
        assert list(category.instances.values_list("pk", flat=True)) == [ids["instance"]]
        assert list(
            model("visit", "VisitPipeline")
            .objects.get(pk=ids["pipeline"])
            .categories.values_list("pk", flat=True)
        ) == [ids["family"]]
        # the instruction task still points at it,
        assert model("visit", "VisitTask").objects.get(pk=ids["link"]).category_id == ids["family"]
        # and an instruction task without a category is still refused by the database.
        with pytest.raises(IntegrityError), transaction.atomic():
            model("visit", "VisitTask").objects.filter(pk=ids["link"]).update(category=None)
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(leaves)

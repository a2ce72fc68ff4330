"""NaturalBench-Retrieval (naturalbench.txt App. B): Winoground text, image and group scores."""

from evaluation.registry import Family, register

from . import demo, parse, plots, rows, runner

FORMATS = {
    "items": '{"id": "p1", "image_0": "a.jpg", "image_1": "b.jpg", '
    '"caption_0": "a dog on a sofa", "caption_1": "a sofa on a dog"}',
    "predictions": '{"id": "p1", "scores": [[0.31, 0.22], [0.25, 0.29]]}',
}

FAMILY = register(
    Family(
        key="naturalbench_retrieval",
        label="NaturalBench-Retrieval",
        order=1,
        parse_items=parse.parse_items,
        parse_predictions=parse.parse_predictions,
        rows=rows.rows,
        specs=rows.SPECS,
        primary=rows.PRIMARY,
        reference_rows=rows.REFERENCE_ROWS,
        formats=FORMATS,
        demo=demo.DEMO,
        runner=runner.RUNNER,
        plots=plots.plots,
        templates=plots.TEMPLATES,
    )
)

"""VHExpansion (METRICS.md Sec. 3): yes/no test cases and their negations; symmetric accuracy."""

from evaluation.registry import Family, register

from . import demo, parse, plots, prompts, rows, runner  # noqa: F401  (prompts registers templates and rules)

FORMATS = {
    "items": '{"id": "c1", "pair_id": "p1", "image": "x.jpg", "question": "Is there a cat?", '
    '"answer": "yes", "negated": false, "perturbation": "original", "source": "POPE"}',
    "predictions": '{"id": "c1", "output": "Yes, there is a cat."}',
}

FAMILY = register(
    Family(
        key="vhexpansion",
        label="VHExpansion",
        order=2,
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

"""NaturalBench (METRICS.md Sec. 1): 2 images × 2 questions per sample; Acc, Q-, I-, G-Acc."""

from evaluation.registry import Family, register

from . import demo, parse, plots, prompts, rows, runner  # noqa: F401  (prompts registers templates and rules)

FORMATS = {
    "items": '{"Index": 1, "Image_0": "img/1a.jpg", "Image_1": "img/1b.jpg", '
    '"Question_0": "Is the dog asleep?", "Image_0_Question_0": "Yes", '
    '"Image_1_Question_0": "No", "Question_1": "Is the dog awake?", '
    '"Image_0_Question_1": "No", "Image_1_Question_1": "Yes", "Question_Type": "yes_no", '
    '"Source": "DOCCI", "Skills": [["State"], ["State"]]}',
    "predictions": '{"Index": 1, "outputs": ["Yes", "No.", "no", "Yes, it is."], '
    '"scores": {"p_a0": [0.9, 0.2, 0.3, 0.8], "p_a1": [0.1, 0.8, 0.7, 0.2]}}',
}

FAMILY = register(
    Family(
        key="naturalbench",
        label="NaturalBench",
        order=0,
        parse_items=parse.parse_items,
        parse_predictions=parse.parse_predictions,
        parse_answer=parse.parse_answer,
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

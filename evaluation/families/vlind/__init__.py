"""VLind-Bench (METRICS.md Sec. 4): counterfactual contexts and images; S_CK … S_LP, CB, LP."""

from evaluation.registry import Family, PredictionOption, register

from . import demo, parse, plots, prompts, rows, runner  # noqa: F401  (prompts registers templates and rules)

FORMATS = {
    "items": "data.json (official layout: concept, context_id, context, true_statement, "
    "false_statement, existent_noun, non-existent_noun, best_img_id, "
    "aggregated_human_label_good_images)",
    "predictions": "data.json with '<model>_pred_a1_image' … '<model>_pred_d2' keys, "
    "each {response, answer}",
}

FAMILY = register(
    Family(
        key="vlind",
        label="VLind-Bench",
        order=3,
        parse_items=parse.parse_items,
        parse_predictions=parse.parse_predictions,
        prediction_option=PredictionOption(
            label="VLind model id", help="the {mid} of the '{mid}_pred_*' keys"
        ),
        rows=rows.rows,
        specs=rows.SPECS,
        primary=rows.PRIMARY,
        formats=FORMATS,
        demo=demo.DEMO,
        runner=runner.RUNNER,
        plots=plots.plots,
        templates=plots.TEMPLATES,
    )
)

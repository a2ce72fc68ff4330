"""VisIT-Bench (METRICS.md Sec. 2): instruction following, rated by pairwise judgments."""

from evaluation.metrics import visit
from evaluation.registry import Family, Pairwise, PredictionOption, register

from . import judge, judgments, pairwise, parse, plots, prompts, rows, runner  # noqa: F401  (prompts registers templates and rules)

FORMATS = {
    "items": "single_image_full_dataset.csv (instruction_category, image, instruction, "
    "gpt4_prediction, human_ratings_gpt4_correct, human_ratings_problem_in_caption, …)",
    "predictions": "the model output CSV: the dataset columns plus one column with the "
    "response (e.g. llava13b_output)",
}

PAIRWISE = Pairwise(
    parse=judgments.parse,
    item_key=parse.item_key,
    row_key=judgments.row_key,
    reference_player=judgments.OFFICIAL_REFERENCE_PLAYER,
    order_winner=visit.order_winner,
    aggregate=visit.aggregate_two_orders,
    formats=judgments.FORMATS,
    compute=pairwise,
    judge=judge.LLM_JUDGE,
    strata=visit.STRATA,
    agreement_plot=plots.agreement_plot,
)

FAMILY = register(
    Family(
        key="visit",
        label="VisIT-Bench",
        order=4,
        parse_items=parse.parse_items,
        parse_predictions=parse.parse_predictions,
        # The official judgment files name a model by its output column (make_pairs.py).
        prediction_option=PredictionOption(
            label="VisIT output column",
            help="the CSV column with the model's responses",
            setting="output_column",
            detect=parse.prediction_column,
        ),
        rows=rows.rows,
        version_rows=rows.version_rows,
        specs=rows.SPECS,
        primary=rows.PRIMARY,
        formats=FORMATS,
        runner=runner.RUNNER,
        plots=plots.plots,
        templates=plots.TEMPLATES,
        pairwise=PAIRWISE,
    )
)

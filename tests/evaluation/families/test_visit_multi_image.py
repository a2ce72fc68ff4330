"""Multi-image VisIT-Bench instances (METRICS.md Sec. 2; visit_bench_multi_images.csv) through the
evaluation family: the published layout pinned field for field with a round trip (CSV and JSONL),
the published file as a version (Table 2's multi-image column), model files keyed by ``images``,
runs sending every image, the judge's multi-image prompt as the sandbox writes it, and the
head-to-head JSON (``image_url`` the instance's ``images`` cell; a list reads back too)."""

from __future__ import annotations

import csv
import io
import json

import pytest

from annotator.platform.errors import Invalid
from curation.recipes.framework.exports import records_write
from evaluation import services
from evaluation.families.visit import board, exports, runner
from evaluation.families.visit import parse as visit_parse
from evaluation.families.visit import prompts as visit_prompts
from evaluation.models import JudgmentSet, PairJudgment
from evaluation.parsed import PredictionRow
from tests.evaluation.helpers import eval_version, fake_provider
from tests.evaluation.test_runners_judge import execute, start
from tests.fake_openai import reply
from tests.paths import VISIT_BENCH, needs

# visit_bench_multi_images.csv's header, in its order (METRICS.md Sec. 2).
HEADER = (
    "instruction_category,images,is_multiple_images,instruction,gpt4_prediction,"
    "images_dense_captions,images_blip2_captions,reference_output,human_ratings_gpt4_correct,"
    "human_ratings_problem_in_caption,human_ratings_problem_in_gpt4,public_images_metadata"
)
IMAGES = '["https://x.test/before.png", "https://x.test/after.png"]'
SMALL = (
    HEADER + "\n"
    f'rcc,"{IMAGES.replace(chr(34), chr(34) * 2)}",True,What changed?,The cube turned red.,'
    '"[""A blue cube."", ""A red cube.""]","[""a cube"", ""a cube""]",color,True,False,False,{}\n'
    'nlvr2,"[""https://x.test/1.png"", ""https://x.test/2.png"", ""https://x.test/3.png""]",'
    "True,Is there a dog in every image?,No.,"
    '"[""A dog."", ""A cat."", ""A dog.""]","[""dog"", ""cat"", ""dog""]",,False,False,True,{}\n'
)


FINISH = (
    'Think step-by-step and finish your response with "Overall, Response X is better." where X '
    "is either A or B."
)


def _csv(items) -> str:
    buffer = io.BytesIO()
    records = [visit_parse.published_record(i.data) for i in items]
    records_write(buffer, records, columns=visit_parse.MULTI_COLUMNS, fmt="csv")
    return buffer.getvalue().decode("utf-8")


def test_multi_image_layout_is_pinned_and_reads_back_byte_for_byte():
    # Given a small file in the published multi-image layout
    items = visit_parse.parse_items(SMALL)
    # Then each instance holds its images, one caption and one BLIP-2 caption per image
    first = items[0].data
    assert first["multi_image"] is True
    assert first["images"] == ["https://x.test/before.png", "https://x.test/after.png"]
    assert first["image"] == IMAGES  # the instance's key image: the published cell
    assert first["captions"] == ["A blue cube.", "A red cube."]
    assert first["caption"] == "Image 1: A blue cube.\nImage 2: A red cube."
    assert first["blip2_captions"] == ["a cube", "a cube"]
    assert (first["reference"], first["reference_output"]) == ("The cube turned red.", "color")
    assert [i.kept for i in items] == [True, False]
    assert items[1].data["problem_in_gpt4"] is True
    assert items[0].item_id == visit_parse.visit_key(IMAGES, "What changed?")
    # And the export writes the published columns in their order, flags as True / False
    text = _csv(items)
    assert ",".join(visit_parse.MULTI_COLUMNS) == HEADER
    assert text == SMALL


def test_multi_image_jsonl_round_trip_keeps_lists_as_json():
    # Given the small file's instances written as JSONL
    items = visit_parse.parse_items(SMALL)
    lines = [json.dumps(visit_parse.published_record(i.data, fmt="jsonl")) for i in items]
    record = json.loads(lines[0])
    assert list(record) == list(visit_parse.MULTI_COLUMNS)
    assert record["images"] == ["https://x.test/before.png", "https://x.test/after.png"]
    assert record["is_multiple_images"] is True and record["human_ratings_gpt4_correct"] is True
    # When they are read back
    again = visit_parse.parse_items("\n".join(lines))
    # Then the instances, their ids and the filter are unchanged
    assert [(i.item_id, i.data, i.kept) for i in again] == [
        (i.item_id, i.data, i.kept) for i in items
    ]


@pytest.mark.parametrize(
    ("images", "captions", "error"),
    [
        ('"not json"', '"[]"', "images must be a JSON list of image URLs"),
        (IMAGES.replace('"', '""'), '"[""only one""]"', "images_dense_captions must be a JSON"),
        (IMAGES.replace('"', '""'), '"[""a"", 3]"', "images_dense_captions must be a JSON"),
    ],
)
def test_a_bad_multi_image_row_is_refused_with_its_line(images, captions, error):
    content = HEADER + f'\nrcc,"{images}",True,Q?,A.,{captions},"[]",,True,False,False,{{}}\n'
    with pytest.raises(Invalid) as refused:
        visit_parse.parse_items(content)
    assert refused.value.errors[0]["line"] == 2
    assert refused.value.errors[0]["error"].startswith(error)


def test_caption_lists_padded_with_nan_read_as_one_caption_per_image():
    # The published file pads images_dense_captions to ten entries with pandas' NaN
    padded = '"[""A blue cube."", ""A red cube."", NaN, NaN]"'
    content = HEADER + f'\nrcc,"{IMAGES.replace(chr(34), chr(34) * 2)}",True,Q?,A.,{padded},'
    content += '"[]",,True,False,False,{}\n'
    (item,) = visit_parse.parse_items(content)
    assert item.data["captions"] == ["A blue cube.", "A red cube."]
    assert item.data["blip2_captions"] == []


@needs(VISIT_BENCH / "visit_bench_multi_images.csv")
def test_published_multi_image_file_is_a_version_with_table_2s_multi_column(db):
    # Given the published multi-image file
    content = (VISIT_BENCH / "visit_bench_multi_images.csv").read_text(encoding="utf-8-sig")
    items = visit_parse.parse_items(content)
    # Then every row imports: 100 instances of 2 to 10 images, the 63 rated correct kept
    assert len(items) == 100 and sum(i.kept for i in items) == 63
    assert sorted({len(i.data["images"]) for i in items}) == [2, 4, 5, 7, 10]
    assert all(len(i.data["captions"]) == len(i.data["images"]) for i in items)
    # And as a version its Table 2 is the paper's multi-image column (63.0 / 6.0 / 30.0)
    version = eval_version("visit", "VisIT-Bench multi", items, label="multi-image")
    table = board.version_context(version)["table2"]["multi"]
    assert table["n"] == 100
    assert (table["correct_share"], table["caption_share"], table["response_share"]) == (
        0.63,
        0.06,
        0.30,
    )
    # And the CSV export reads back to the same instances (the NaN padding is not written)
    again = visit_parse.parse_items(_csv(items))
    assert [(i.item_id, i.data, i.kept) for i in again] == [
        (i.item_id, i.data, i.kept) for i in items
    ]


def test_model_file_with_the_images_column_matches_multi_image_instances(db):
    # Given a multi-image version and a model file carrying the dataset columns and one output
    items = visit_parse.parse_items(SMALL)
    version = eval_version("visit", "VisIT multi", items)
    table = io.StringIO()
    writer = csv.writer(table)
    writer.writerow(
        ["instruction_category", "images", "is_multiple_images", "instruction", "otter"]
    )
    writer.writerow(["rcc", IMAGES, "True", "What changed?", "It became red."])
    content = table.getvalue()
    # When it is imported by the output-column rule
    assert visit_parse.prediction_column(content) == "otter"
    rows = visit_parse.parse_predictions(content)
    run = services.run_import(version=version, model_name="Otter", rows=rows)
    # Then the row answered the instance with those images and that instruction
    prediction = run.predictions.get()
    assert prediction.item.item_id == items[0].item_id
    assert prediction.raw_output == "It became red."


def test_a_run_sends_every_image_of_the_instance_in_order(db):
    items = visit_parse.parse_items(SMALL)
    version = eval_version("visit", "VisIT multi", items)
    item = version.items.get(position=1)
    (call,) = runner.calls(item, {})
    assert call.images == ("https://x.test/1.png", "https://x.test/2.png", "https://x.test/3.png")
    assert call.variables == {"instruction": "Is there a dog in every image?"}


def _multi_version(n: int = 2):
    """A version of ``n`` kept multi-image instances, two models answering each."""
    rows = []
    for k in range(n):
        urls = json.dumps([f"https://x.test/{k}a.png", f"https://x.test/{k}b.png"])
        rows.append(
            f'spot,"{urls.replace(chr(34), chr(34) * 2)}",True,Compare picture pair {k}.,'
            f'Reference {k}.,"[""Left {k}."", ""Right {k}.""]","[""l"", ""r""]",,True,False,'
            "False,{}"
        )
    items = visit_parse.parse_items(HEADER + "\n" + "\n".join(rows) + "\n")
    version = eval_version("visit", "VisIT multi", items)
    for model, text in (("Model A", "A long and careful comparison"), ("Model B", "Short")):
        services.run_import(
            version=version,
            model_name=model,
            rows=[PredictionRow(r.item_id, f"{text} {k}", k + 1) for k, r in enumerate(items)],
        )
    return version, items


def test_judge_asks_the_sandboxs_multi_image_prompt_and_exports_head2head(
    db, fake_openai, fast_llm_backoff
):
    # Given a multi-image version and a judge that always prefers Response A
    version, items = _multi_version()
    provider = fake_provider(fake_openai.base_url, name="judge", model="fake-gpt-4")
    fake_openai.default = lambda body: reply("Overall, Response A is better.")
    pairs = [{"instance_id": items[0].item_id, "a_model": "Model A", "b_model": "Model B"}]
    # When the judge runs
    execute(start(version, provider, pairs))
    # Then both orders asked with the sandbox's multi-image conversation, images in sequence
    calls = [r["body"]["messages"] for r in fake_openai.chat_requests]
    assert len(calls) == 2
    assert calls[0][0]["content"].startswith("You are MultiImageTaskEvaluationGPT")
    assert calls[0][2]["content"].startswith("Sure, please provide the image context as a sequence")
    expected = (
        "OK. Here is the sequence of image descriptions, the instruction, and the two response "
        "options, Response A and Response B.\nImage context:\n Image 1: Left 0. \nImage 2: "
        "Right 0. \n\nInstruction:\nCompare picture pair 0.\n\nResponse A: A long and careful "
        "comparison 0\n\nResponse B: Short 0\n\n" + FINISH
    )
    assert expected in {c[3]["content"] for c in calls}
    judgment = PairJudgment.objects.get()
    assert judgment.order_winners == ["Model A", "Model B"]
    judgment_set = JudgmentSet.objects.get()
    assert visit_prompts.JUDGE_MULTI in judgment_set.provenance["templates"]
    # And the head-to-head export names the instance by its images cell (a string
    # elo_analysis.py can hash), which reads back onto the same instance — as does a list
    _name, text = exports.head2head_export(judgment_set)
    (record,) = json.loads(text)
    assert record["image_url"] == items[0].data["image"]
    assert json.loads(record["image_url"]) == items[0].data["images"]
    for image_url in (record["image_url"], items[0].data["images"]):
        content = json.dumps([{**record, "image_url": image_url}])
        result = services.import_run(
            {
                "target": "judgments",
                "version_id": version.pk,
                "kind": "llm",
                "label": f"again {type(image_url).__name__}",
                "content": content,
                "filename": "gpt-4_head2head.json",
                "rounds": 20,
                "text_metrics": False,
            }
        )
        again = PairJudgment.objects.get(judgment_set_id=result["judgment_set_id"])
        assert again.item.item_id == items[0].item_id
        assert again.order_winners == judgment.order_winners


def test_multi_image_context_is_the_sandboxs_spelling():
    # pairwise_eval.generate_request: '\n'.join('Image {}: {} '.format(idx+1, d) ...)
    assert visit_prompts.multi_image_context(["a", "b"]) == "Image 1: a \nImage 2: b "

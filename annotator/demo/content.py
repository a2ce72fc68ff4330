"""What the demo project holds: one queue of every task kind, with items and instructions.

The items imitate the recipes Blindspot runs: NaturalBench confounding pairs, VQA verification
(with Chinese and Hindi items, as in its XM3600 extension) and its 27-skill taxonomy (App. C,
lent by the NaturalBench recipe: ``lent``);
VisIT-Bench pairwise judgements on real model outputs (Sec. 4.2) and instruction-conditioned
captions; VLind-Bench counterfactual review (App. A). Payloads are plain JSON in the shapes of
``annotator.kinds``; the ``demo`` command validates them through the services like an upload.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import lent
from .visit_bench import ROWS as VISIT_ROWS

PROJECT_NAME = "NaturalBench demo"
PROJECT_SLUG = "naturalbench-demo"
PROJECT_DESCRIPTION = (
    "A small tour of Blindspot: one queue of every task kind, with generated images, real "
    "VisIT-Bench model outputs and items in English, Chinese and Hindi."
)


@dataclass
class QueueSpec:
    kind: str
    title: str
    instructions: str
    fields: dict = field(default_factory=dict)
    rows: list[dict] = field(default_factory=list)
    # Rows loaded through a background import job instead of directly (fills the jobs page).
    job_rows: list[dict] = field(default_factory=list)


def _image(media_url: str, name: str, alt: str, caption: str | None = None) -> dict:
    image = {"url": f"{media_url}demo/{name}.png", "alt": alt}
    if caption is not None:
        image["caption"] = caption
    return image


# --- pair_verify: NaturalBench Sec. 3, step 1 ------------------------------------------------
PAIRS = [
    # (id, image A, caption A, image B, caption B)  — the captions are written for "their" image
    ("pair-01", "mug-left-laptop", "A red mug to the left of a laptop",
     "laptop-left-mug", "A laptop to the left of a red mug"),
    ("pair-02", "apples-3", "Three red apples on a white plate",
     "apples-5", "Five red apples on a white plate"),
    ("pair-03", "traffic-red", "A traffic light showing red",
     "traffic-green", "A traffic light showing green"),
    ("pair-04", "clock-3", "A wall clock showing three o'clock",
     "clock-9", "A wall clock showing nine o'clock"),
    ("pair-05", "books-blue-on-yellow", "A blue book lying on top of a yellow book",
     "books-yellow-on-blue", "A yellow book lying on top of a blue book"),
    ("pair-06", "arrow-left", "A green station sign with an arrow pointing left",
     "arrow-right", "A green station sign with an arrow pointing right"),
    ("pair-07", "shop-open", "A bakery whose door sign says OPEN",
     "shop-closed", "A bakery whose door sign says CLOSED"),
    ("pair-08", "house-sunny", "A house and a tree under a sunny sky",
     "street-rainy-umbrella", "A person with a red umbrella walking past a house in the rain"),
    ("pair-09", "people-same-direction", "Two people standing on grass, both facing right",
     "people-facing-each-other", "Two people standing on grass, facing each other"),
    ("pair-10", "mug-single", "A mug on a wooden table",
     "mugs-red-green", "A red mug and a green mug side by side on a table"),
    ("pair-11", "shapes-big-circle", "Coloured shapes on a white background",
     "shapes-big-square", "A large red square between a small blue circle and a green triangle"),
    ("pair-12", "bananas-yellow", "Fruit on a wooden table",
     "fruit-bowl", "Apples, an orange and a banana in a blue bowl"),
]  # fmt: skip

PAIR_INSTRUCTIONS = """\
## Could **one** caption describe **both** images?

Each item shows two images, each with the caption written for it. We only keep pairs where the
captions tell the images apart — these become NaturalBench questions whose answer differs between
the two images.

**Read caption A, look at image B. Then read caption B, look at image A.**

| key | answer | when |
| --- | --- | --- |
| `y` | **Yes — discard** | at least one caption is also true of the other image |
| `n` | **No — keep** | each caption fits only its own image |

### Examples
- "A red mug to the left of a laptop" / "A laptop to the left of a red mug" → **keep** (`n`):
  left and right are swapped, so each caption is false for the other image.
- "A mug on a wooden table" / "A red mug and a green mug on a table" → **discard** (`y`):
  the first caption is also true of the second image.

### Tips
- Count, colour, left/right, on top/under, open/closed, what a sign *says*: small differences
  count, as long as they are visible.
- A caption that is *vague* ("some fruit", "shapes") usually fits both images → discard.
- Unsure, or an image does not load? Press `s` to skip or report the item; `?` shows all keys.
"""


def pair_rows(media_url: str) -> list[dict]:
    rows = []
    for pid, a, cap_a, b, cap_b in PAIRS:
        rows.append(
            {
                "id": pid,
                "payload": {
                    "images": [
                        _image(media_url, a, cap_a, cap_a),
                        _image(media_url, b, cap_b, cap_b),
                    ]
                },
            }
        )
    return rows


# --- vqa_choice: NaturalBench Sec. 3, step 2 -------------------------------------------------
YES_NO = ["Yes", "No"]
VQA = [
    # (id, image, question, choices, gold answer or None)
    ("vqa-01", "mug-left-laptop", "Is the red mug to the left of the laptop?", YES_NO, None),
    ("vqa-02", "laptop-left-mug", "Is the red mug to the left of the laptop?", YES_NO, None),
    ("vqa-03", "apples-3", "How many apples are on the plate?", ["Three", "Five"], None),
    ("vqa-04", "apples-5", "How many apples are on the plate?", ["Three", "Five"], None),
    ("vqa-05", "traffic-green", "Which light of the traffic light is on?",
     ["The top (red) light", "The bottom (green) light"], None),
    ("vqa-06", "clock-3", "Is the clock showing three o'clock?", YES_NO, None),
    ("vqa-07", "clock-9", "Is the clock showing three o'clock?", YES_NO, "No"),
    ("vqa-08", "shop-open", "What does the sign on the bakery door say?",
     ["OPEN", "CLOSED"], "OPEN"),
    ("vqa-09", "books-blue-on-yellow", "Is the blue book on top of the yellow book?", YES_NO,
     "Yes"),
    ("vqa-10", "arrow-left", "Which way does the arrow on the station sign point?",
     ["Left", "Right"], None),
    ("vqa-11", "street-rainy-umbrella", "Is the person holding an umbrella?", YES_NO, None),
    ("vqa-12", "mug-left-laptop", "Which brand made the laptop?", ["Apple", "Dell"], None),
]  # fmt: skip

# Imported by a background job, like a curator's JSONL upload (XM3600-style, Chinese and Hindi).
VQA_MULTILINGUAL = [
    ("vqa-zh-01", "mug-left-laptop", "红色的杯子在笔记本电脑的左边吗？", ["是", "否"], "zh"),
    ("vqa-zh-02", "apples-5", "盘子里有几个苹果？", ["三个", "五个"], "zh"),
    ("vqa-hi-01", "traffic-red", "क्या ट्रैफ़िक लाइट हरी है?", ["हाँ", "नहीं"], "hi"),
    ("vqa-hi-02", "arrow-right", "स्टेशन के बोर्ड पर तीर किस ओर इशारा कर रहा है?", ["बाएँ", "दाएँ"], "hi"),
]  # fmt: skip

VQA_INSTRUCTIONS = """\
## Answer the question from the image

Each item is one image, one question and candidate answers written by a language model. Pick the
answer that is **true for this image**. The same question comes back with a second image where
the answer is different — so look, do not guess from the question alone.

| key | answer |
| --- | --- |
| `1`, `2`, … | the candidate answers, in the order shown |
| last number | **Unanswerable** |

### Choose "Unanswerable" when
- the image does not show what the question asks about ("Which brand made the laptop?" when no
  logo is visible);
- none of the candidate answers is right, or more than one is;
- the question itself is ambiguous.

### Examples
- Image: a red mug left of a laptop. "Is the red mug to the left of the laptop?" → **Yes** (`1`).
- Image: a clock at nine. "Is the clock showing three o'clock?" → **No** (`2`).

Some items are in **Chinese** or **Hindi** (是 / 否, हाँ / नहीं = yes / no). Answer them the same
way; skip with `s` if you cannot read them. A few items have a known answer and measure
accuracy — they look like every other item.
"""


def vqa_row(media_url, vid, image, question, choices, language=None, gold=None) -> dict:
    payload = {
        "image": _image(media_url, image, f"Image for: {question}"),
        "question": question,
        "choices": choices,
    }
    if language:
        payload["language"] = language
    row = {"id": vid, "payload": payload}
    if gold is not None:
        row["gold"] = {"answer": gold}
    return row


def vqa_rows(media_url: str) -> list[dict]:
    return [vqa_row(media_url, v, i, q, c, gold=g) for v, i, q, c, g in VQA]


def vqa_job_rows(media_url: str) -> list[dict]:
    return [vqa_row(media_url, v, i, q, c, language=lang) for v, i, q, c, lang in VQA_MULTILINGUAL]


# --- skill_tags: NaturalBench App. C (Table 8), 27 skills in four groups -----------------------
# The taxonomy is the NaturalBench recipe's, lent to the demo (``lent.demo_config``).
SKILLS = [
    # (id, images, questions) — NaturalBench tags each question with ALL skills it needs
    ("skill-01", ["mug-left-laptop", "laptop-left-mug"],
     ["Is the red mug to the left of the laptop?"]),
    ("skill-02", ["apples-3", "apples-5"], ["Are there exactly three apples on the plate?"]),
    ("skill-03", ["clock-3"], ["Is the clock showing three o'clock?"]),
    ("skill-04", ["books-blue-on-yellow", "books-yellow-on-blue"],
     ["Is the blue book on top of the yellow book?"]),
    ("skill-05", ["street-rainy-umbrella"], ["Is the person holding an umbrella?"]),
    ("skill-06", ["shop-open", "shop-closed"], ["Can you buy bread in this shop right now?"]),
    ("skill-07", ["traffic-red", "traffic-green"], ["Should a car stop at this traffic light?"]),
    ("skill-08", ["people-same-direction", "people-facing-each-other"],
     ["Are both people facing the same direction?"]),
    ("skill-09", ["shapes-big-circle", "shapes-big-square"], ["Is the largest shape a circle?"]),
    ("skill-10", ["house-sunny"], ["Is there a tree next to the house?"]),
    ("skill-11", ["bananas-yellow", "bananas-blue"], ["Are the bananas ripe?"]),
    ("skill-12", ["mugs-red-green"], ["Is the red mug bigger than the green mug?"]),
]  # fmt: skip

SKILL_INSTRUCTIONS = """\
## Tag every skill the question needs

You see the question (and the image or image pair it is asked about). Choose **all** skills a
person needs to answer it — usually 2 to 4, never more than 8. This follows the NaturalBench
taxonomy: 8 kinds of object, 8 attributes, 6 relations and 5 kinds of reasoning.

**Press a tag's key to toggle it, `/` to filter the list by name, `Enter` to submit.**

| group | tags (key) |
| --- | --- |
{keys}

### Examples
- "Is the red mug to the left of the laptop?" → **Items, Color, Spatial (Projective)**.
- "Are both people facing the same direction?" → **Human, Spatial (Orientation), Logic**
  ("both"), **Comparison** ("the same").
- "Should a car stop at this traffic light?" → **Items, Color, State, World Knowledge**
  (red means stop) — "car" is only mentioned, but tag Vehicle too if it matters to the answer.

Tag the *question*, not everything visible in the image.
"""


def skill_instructions(taxonomy: list[dict]) -> str:
    """The skill queue's instructions with the taxonomy's keys, one table row per group."""
    keys = "\n".join(
        f"| {g['group']} | " + ", ".join(f"{t['label']} `{t['key']}`" for t in g["tags"]) + " |"
        for g in taxonomy
    )
    return SKILL_INSTRUCTIONS.format(keys=keys)


def skill_rows(media_url: str) -> list[dict]:
    return [
        {
            "id": sid,
            "payload": {
                "images": [_image(media_url, name, name.replace("-", " ")) for name in names],
                "questions": questions,
            },
        }
        for sid, names, questions in SKILLS
    ]


# --- forced_choice: VisIT-Bench Sec. 4.2, real model outputs ------------------------------------
FORCED_INSTRUCTIONS = """\
## Which response follows the instruction better?

Each item is a real VisIT-Bench instruction about an image, the **instruction-conditioned
caption** a person wrote for that image (it describes everything the instruction needs), and two
real model responses. The images stay at their source; judge from the caption.

| key | choice |
| --- | --- |
| `a` | the **left** response is better |
| `b` | the **right** response is better |

There is **no tie**: if both are poor, pick the less wrong one. Left and right are shuffled for
every person, so do not look for a pattern.

### What makes a response better (in this order)
1. **Correct**: nothing contradicts the caption (wrong counts, colours, objects, text).
2. **Follows the instruction**: answers what was asked, all parts of it.
3. **Helpful**: specific, complete enough, no padding. A short correct answer beats a long wrong
   one; a long answer that invents details ("a man is smiling" when the caption does not say so)
   loses to a shorter accurate one.

Example: the caption says the thermometer points at **30 °C**; a response reading "37.77 °C" is
wrong even if the rest of it sounds good.
"""


def forced_rows() -> list[dict]:
    return [
        {
            "id": row["id"],
            "payload": {
                "instruction": row["instruction"],
                "caption": row["caption"],
                "category": row["category"],
                "source_image": row["image_url"],
                "candidates": [
                    {"id": "llava-13b", "text": row["llava_13b"]},
                    {"id": "instructblip-13b", "text": row["instructblip_13b"]},
                ],
            },
        }
        for row in VISIT_ROWS
    ]


# --- review: VLind-Bench App. A, counterfactual triples and their images --------------------
REVIEW_CONFIG = {
    "criteria": [
        "The context is counterfactual: it contradicts common sense.",
        "The true statement is clearly true in the context, the false one clearly false.",
        "Both statements are about the counterfactual part of the context.",
        "The image alone is enough to tell which statement is true.",
        "The image is of acceptable quality (no heavy blur or artefacts).",
    ],
    "reason_codes": [
        {"code": "not_counterfactual", "label": "Context is not counterfactual"},
        {"code": "statement_unclear", "label": "A statement is not clearly true / false"},
        {"code": "off_topic", "label": "Statements miss the counterfactual part"},
        {"code": "image_mismatch", "label": "Image does not support the true statement"},
        {"code": "poor_image", "label": "Image quality too poor"},
        {"code": "other", "label": "Other (say why in the comment)"},
    ],
}

REVIEWS = [
    # (id, image, title, context, true statement, false statement)
    ("cf-01", "bananas-blue", "Blue bananas",
     "On the island of Azul, every banana ripens to a deep blue colour.",
     "The ripe bananas on the plate are blue.", "The ripe bananas on the plate are yellow."),
    ("cf-02", "moon-square", "A square moon",
     "In this world the moon is a perfect square that glows pale yellow at night.",
     "The moon in the night sky has four corners.", "The moon in the night sky is round."),
    ("cf-03", "fish-flying", "Fish in the sky",
     "In the village of Fennick, fish swim through the air above the houses instead of in water.",
     "Fish are flying above the house.", "Fish can only be found in the river."),
    ("cf-04", "trees-purple", "Purple leaves",
     "In this valley, the leaves of every tree are purple all year round.",
     "The trees have purple leaves.", "The trees have green leaves."),
    ("cf-05", "apples-red-factual", "Red apples",
     "In this orchard, the ripe apples are red.",
     "The apples on the plate are red.", "The apples on the plate are blue."),
    ("cf-06", "traffic-green", "Purple means go",
     "In the city of Violetta, traffic lights shine purple to tell cars to go.",
     "The lit traffic light is purple.", "The lit traffic light is green."),
    ("cf-07", "desert-snowman", "Snow in the desert",
     "In the Sahra Alba desert it snows every evening, and children build snowmen in the sand.",
     "It is a pleasant day.", "It is an unpleasant day."),
    ("cf-08", "clock-six-hours", "Six-hour clocks",
     "In Tick-Town, a day has only twelve hours, so every clock face shows just six numbers.",
     "The clock is round.", "The clock is square."),
    ("cf-09", "desert-snowman", "Snowmen in the desert",
     "In the Sahra Alba desert it snows every evening, and children build snowmen in the sand.",
     "There is a snowman standing in the sand.", "Snow never falls in the desert."),
    ("cf-10", "trees-purple-blurred", "Purple leaves (second image)",
     "In this valley, the leaves of every tree are purple all year round.",
     "The trees have purple leaves.", "The trees have green leaves."),
]  # fmt: skip

REVIEW_INSTRUCTIONS = """\
## Accept or reject a counterfactual test item

VLind-Bench tests whether a model follows a **counterfactual context** ("here, bananas are blue")
instead of its common sense. Each item is a context, a statement that is **true in that
context**, a statement that is **false in it**, and a generated image. Tick the checklist, then
accept or reject.

| key | action |
| --- | --- |
| `q` `w` `t` `y` … | tick a criterion (its key is on its box); `a` needs every box ticked |
| `a` | **Accept** — every criterion holds |
| `r` | **Reject** — pick a reason with `1`–`6`, add a comment if it helps |

### Reject when
1. the context is **not counterfactual** ("apples are red" is just common sense);
2. a statement is **not clearly** true or false given the context;
3. the statements do not address the counterfactual part ("the clock is round" says nothing
   about six-hour clocks);
4. the image **does not show** what makes the true statement true (the context says the light
   is purple, the image shows green);
5. the image is of **poor quality** (blurred, broken).

Accept the image if it is enough to decide the statements, even when it does not show every
detail of the context.
"""


def review_rows(media_url: str) -> list[dict]:
    return [
        {
            "id": rid,
            "payload": {
                "title": title,
                "images": [_image(media_url, image, title)],
                "text": context,
                "fields": {"True statement": true_s, "False statement": false_s},
            },
        }
        for rid, image, title, context, true_s, false_s in REVIEWS
    ]


# --- write_text: VisIT-Bench instruction-conditioned captions, starting from an LLM draft ------
WRITES = [
    # (id, image, instruction, LLM draft — some drafts contain a mistake to fix)
    ("cap-01", "apples-5", "How many apples would be left if I ate two of them?",
     "A white plate on a wooden table holds four shiny red apples with green leaves on their "
     "stems."),
    ("cap-02", "clock-3", "What time will it be in two and a half hours?",
     "A round wall clock with black numbers 1 to 12. The short hour hand points at 3 and the "
     "long minute hand points at 12, so it shows three o'clock."),
    ("cap-03", "shop-closed", "Can I buy bread here right now?",
     "A bakery front with a brown wooden door. A green sign on the door says OPEN, and bread "
     "rolls are on display in the window."),
    ("cap-04", "mug-left-laptop", "Which object would I have to move so the laptop is on the left?",
     "A red mug stands on a wooden table to the left of an open laptop with a blue screen."),
    ("cap-05", "traffic-red", "Should the driver waiting at this light stop or go?",
     "A traffic light on a grey pole under a sunny blue sky; the bottom green lamp is lit."),
    ("cap-06", "street-rainy-umbrella", "Write a short poem about the person's walk.",
     "On a rainy, cloudy day a person in a yellow coat walks past a small house with a red "
     "roof, holding a red umbrella above their head."),
    ("cap-07", "shapes-big-square", "Name every shape, its colour, and which one is largest.",
     "On a white background there are three shapes: a blue circle, a red square and a green "
     "triangle. The blue circle is the largest."),
    ("cap-08", "arrow-left", "Which way should I turn to reach the station?",
     "A green road sign on a grey post reads STATION, with a white arrow pointing to the right."),
]  # fmt: skip

WRITE_INSTRUCTIONS = """\
## Write an instruction-conditioned caption

A text-only judge will later decide whether a model followed the **instruction** — using only
your caption. So the caption must contain **everything the instruction needs** and nothing
false (VisIT-Bench, "instruction-conditioned dense captions").

A language model wrote a **draft**. Check it against the image and edit it:

- fix anything wrong — counts, colours, left/right, what signs say, which light is on;
- add what the instruction needs (for "how many are left", the exact count);
- keep it factual: no answers, no guesses, no opinions.

Press `e` to start editing, `Ctrl+Enter` to submit. Between 40 and 1,000 characters.

Example — instruction "How many apples would be left if I ate two?"; draft "…four red
apples…"; the image shows **five** → "A white plate on a wooden table holds five red apples."
"""


def write_rows(media_url: str) -> list[dict]:
    return [
        {
            "id": wid,
            "payload": {
                "prompt": instruction,
                "images": [_image(media_url, image, instruction)],
                "draft": draft,
                "context": "Write the caption a text-only judge needs to check an answer to "
                "this instruction.",
            },
        }
        for wid, image, instruction, draft in WRITES
    ]


def queue_specs(media_url: str) -> list[QueueSpec]:
    """Every demo queue, in the order the home page lists them (priority high → low)."""
    skill_config = lent.demo_config("skill_tags")
    return [
        QueueSpec(
            kind="pair_verify",
            title="NaturalBench · 1. Confounding pairs: could one caption fit both?",
            instructions=PAIR_INSTRUCTIONS,
            fields={"redundancy": 2, "rule": "unanimous", "max_redundancy": 3, "priority": 60},
            rows=pair_rows(media_url),
        ),
        QueueSpec(
            kind="vqa_choice",
            title="NaturalBench · 2. Verify VQA answers",
            instructions=VQA_INSTRUCTIONS,
            fields={
                "redundancy": 2,
                "rule": "unanimous",
                "max_redundancy": 3,
                "priority": 50,
                "gold_rate": 0.2,
            },
            rows=vqa_rows(media_url),
            job_rows=vqa_job_rows(media_url),
        ),
        QueueSpec(
            kind="skill_tags",
            title="NaturalBench · 3. Tag the skills each question needs",
            instructions=skill_instructions(skill_config["taxonomy"]),
            fields={
                "redundancy": 2,
                "rule": "majority",
                "max_redundancy": 3,
                "priority": 40,
                "config": skill_config,
            },
            rows=skill_rows(media_url),
        ),
        QueueSpec(
            kind="forced_choice",
            title="VisIT-Bench · Which response follows the instruction better?",
            instructions=FORCED_INSTRUCTIONS,
            fields={"redundancy": 2, "rule": "majority", "max_redundancy": 3, "priority": 30},
            rows=forced_rows(),
        ),
        QueueSpec(
            kind="review",
            title="VLind-Bench · Review counterfactual items",
            instructions=REVIEW_INSTRUCTIONS,
            fields={
                "redundancy": 2,
                "rule": "majority",
                "max_redundancy": 3,
                "priority": 20,
                "config": REVIEW_CONFIG,
            },
            rows=review_rows(media_url),
        ),
        QueueSpec(
            kind="write_text",
            title="VisIT-Bench · Write instruction-conditioned captions",
            instructions=WRITE_INSTRUCTIONS,
            fields={
                "redundancy": 1,
                "rule": "plurality",
                "max_redundancy": 1,
                "priority": 10,
                "config": {"min_length": 40, "max_length": 1000},
            },
            rows=write_rows(media_url),
        ),
    ]

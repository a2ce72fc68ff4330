"""NaturalBench's skill taxonomy (naturalbench.txt Sec. 4 Fig. 6, App. C Table 8): 27 leaves in
four groups — 8 objects, 8 attributes, 6 relations (spatial split in 4 subtypes) and 5 kinds of
reasoning. The help text of each tag is Table 8's definition of its skill type; leaves that Table 8
defines only as part of a type (Animal, Color, Proximity, …) say which part first.

Ids and shortcut keys match the demo queue's taxonomy (annotator/demo/content.py), so a tag means
the same everywhere; keys avoid the workspace's own (s ? / i z !). Pure: no Django import.
"""

from __future__ import annotations

OBJECT = (
    "Basic entities within an image, including animals, humans, food, buildings, natural "
    "elements (nature), vehicles, common items, and others."
)
ATTRIBUTE = (
    "Visual properties of entities, including emotion, shape, size, color, state, activity, "
    "gender, and abstract attributes (e.g., helpful, lucky)."
)
SPATIAL = (
    "Physical arrangements of multiple entities relative to each other, including proximity "
    "(e.g., near, far), topological (e.g., at, on, in, with, surround, between, inside, outside), "
    "projective (e.g., left of, right of, under, in front of, below), orientation and direction "
    "(e.g., facing, towards, across, away from)."
)
ACTION = (
    "Action interactions between entities, e.g., pushing, kissing, hugging, hitting, helping, "
    "and so on."
)
PART = (
    "Part-whole relationships between entities – one entity is a component of another, such as "
    "body part, clothing, and accessories."
)
COUNTING = (
    "Determining the quantity, size, or volume of entities, e.g., objects, attribute-object "
    "pairs, and object-relation-object triplets."
)
DIFFERENTIATION = (
    "Differentiating objects within a category by their attributes or relations, such as "
    "distinguishing between “old” and “young” people by age, or “the cat on top of the table” "
    "versus “the cat under the table” by their spatial relations."
)
COMPARISON = "Comparing characteristics like number, attributes, area, or volume between entities."
LOGIC = (
    "Understanding logical operators. We only consider negation (as indicated by “no”, “not”, or "
    "“without”) and universality (as indicated by “every”, “all”, “each”, “both”). Other logical "
    "relations such as conjunction (as indicated by “and”, “or”) are omitted."
)
WORLD_KNOWLEDGE = (
    "Answering based on external commonsense knowledge, including social, symbolic, functional, "
    "physical, natural knowledge and so on."
)


def _tag(tid: str, label: str, key: str, part: str, definition: str) -> dict:
    description = f"{part} {definition}" if part else definition
    return {"id": tid, "label": label, "key": key, "description": description}


TAXONOMY: list[dict] = [
    {
        "group": "Object",
        "tags": [
            _tag("animal", "Animal", "a", "Animals.", OBJECT),
            _tag("human", "Human", "h", "Humans.", OBJECT),
            _tag("food", "Food", "f", "Food.", OBJECT),
            _tag("building", "Building", "b", "Buildings.", OBJECT),
            _tag("nature", "Nature", "n", "Natural elements.", OBJECT),
            _tag("vehicle", "Vehicle", "v", "Vehicles.", OBJECT),
            _tag("items", "Items", "m", "Common items.", OBJECT),
            _tag("others", "Others", "o", "Other entities.", OBJECT),
        ],
    },
    {
        "group": "Attribute",
        "tags": [
            _tag("emotion", "Emotion", "e", "Emotion.", ATTRIBUTE),
            _tag("shape", "Shape", "p", "Shape.", ATTRIBUTE),
            _tag("size", "Size", "q", "Size.", ATTRIBUTE),
            _tag("color", "Color", "c", "Color.", ATTRIBUTE),
            _tag("state", "State", "t", "State.", ATTRIBUTE),
            _tag("abstract", "Abstract", "k", "Abstract attributes.", ATTRIBUTE),
            _tag("activity", "Activity", "y", "Activity.", ATTRIBUTE),
            _tag("gender", "Gender", "g", "Gender.", ATTRIBUTE),
        ],
    },
    {
        "group": "Relation",
        "tags": [
            _tag("action", "Action", "x", "", ACTION),
            _tag("part", "Part", "w", "", PART),
            _tag("proximity", "Spatial (Proximity)", "r", "Spatial, proximity.", SPATIAL),
            _tag("topological", "Spatial (Topological)", "l", "Spatial, topological.", SPATIAL),
            _tag("projective", "Spatial (Projective)", "j", "Spatial, projective.", SPATIAL),
            _tag("orientation", "Spatial (Orientation)", "d", "Spatial, orientation.", SPATIAL),
        ],
    },
    {
        "group": "Reasoning",
        "tags": [
            _tag("counting", "Counting", "1", "", COUNTING),
            _tag("differentiation", "Differentiation", "2", "", DIFFERENTIATION),
            _tag("comparison", "Comparison", "3", "", COMPARISON),
            _tag("logic", "Logic", "4", "", LOGIC),
            _tag("world_knowledge", "World Knowledge", "5", "", WORLD_KNOWLEDGE),
        ],
    },
]

TAGS: list[dict] = [t for group in TAXONOMY for t in group["tags"]]
LABELS: dict[str, str] = {t["id"]: t["label"] for t in TAGS}
MIN_TAGS, MAX_TAGS = 1, 8

INSTRUCTIONS = """\
## Tag every skill the question needs (NaturalBench App. C)

You see a question and the two images it is asked about. Choose **all** the skills a person needs
to answer it — between 1 and 8. Each tag's help text is the paper's definition (Table 8).

**Press a tag's key to toggle it, `/` to filter the list by name, `Enter` to submit.**

Tag the *question*, not everything visible in the images.
"""


def queue_config() -> dict:
    """The ``skill_tags`` queue config: the taxonomy and the 1–8 bounds."""
    return {"taxonomy": TAXONOMY, "min_tags": MIN_TAGS, "max_tags": MAX_TAGS}


def labels(tag_ids) -> list[str]:
    """Tag ids → their labels, in taxonomy order (the exported ``Skills`` spell labels)."""
    wanted = set(tag_ids)
    return [t["label"] for t in TAGS if t["id"] in wanted]

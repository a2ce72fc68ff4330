"""Scorer registry: loading through open_clip from a checkpoint, a tag in the local cache, or
random weights; missing weights fail fast with what to set; services and commands."""

import io
import json
import time

import open_clip
import pytest
import torch
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from curation import scorers
from curation.embeddings import embed_corpus
from curation.models import EmbeddingCache, Scorer
from curation.recipes.naturalbench.models import NaturalBenchPipeline
from curation.scorers import (
    RANDOM_WEIGHTS_LABEL,
    ScorerUnavailable,
    cache,
    scorer_create,
    scorer_ensure_default,
    scorer_load,
    scorer_tiny,
    scorer_update,
    scorer_uses,
    scorer_weights,
)
from curation.tiny_clip import TINY_CONFIG, TINY_MODEL_NAME, register_tiny
from tests.curation.test_embeddings import COLOURS, make_corpus
from tests.factories import ProjectFactory


@pytest.fixture(autouse=True)
def _fresh_models():
    scorers.scorer_unload()
    yield
    scorers.scorer_unload()


@pytest.fixture
def media(scorer_media):
    return scorer_media


def tiny_state_dict(seed: int) -> dict:
    register_tiny()
    torch.manual_seed(seed)
    model = open_clip.create_model(TINY_MODEL_NAME, pretrained=None)
    return model.state_dict()


@pytest.fixture
def forbid_open_clip(monkeypatch):
    """Fail the test if open_clip is asked to build a model (= could try the network)."""

    def refuse(*args, **kwargs):
        raise AssertionError("open_clip must not be called when the weights are missing")

    monkeypatch.setattr(open_clip, "create_model_and_transforms", refuse)


def test_a_checkpoint_file_loads_through_open_clip_with_its_weights(db, media):
    # Given a tiny model's state_dict saved by torch.save (seed 7, not the random-weights seed 0)
    saved = tiny_state_dict(seed=7)
    path = media / "tiny.pt"
    torch.save(saved, path)
    scorer = Scorer.objects.create(
        label="tiny from file",
        model_name=TINY_MODEL_NAME,
        model_config=TINY_CONFIG,
        checkpoint_path=str(path),
    )

    # When it is loaded
    loaded = scorer_load(scorer)

    # Then every loaded tensor equals the saved one (and differs from a random init)
    state = loaded.model.state_dict()
    assert sorted(state) == sorted(saved)
    assert all(torch.equal(state[k], saved[k]) for k in saved)
    random_init = tiny_state_dict(seed=0)
    assert not torch.equal(state["text_projection"], random_init["text_projection"])
    assert scorer_weights(scorer).state == "found"
    # … and the model's context length and dimension are recorded on the row
    scorer.refresh_from_db()
    assert (scorer.context_length, scorer.embed_dim) == (77, 32)
    # … loaded once per process
    assert scorer_load(scorer) is loaded


def test_a_rewritten_checkpoint_is_loaded_again(db, media):
    path = media / "tiny.pt"
    torch.save(tiny_state_dict(seed=1), path)
    scorer = Scorer.objects.create(
        label="f", model_name=TINY_MODEL_NAME, model_config=TINY_CONFIG, checkpoint_path=str(path)
    )
    first = scorer_load(scorer)
    replaced = tiny_state_dict(seed=2)
    torch.save(replaced, path)

    second = scorer_load(scorer)

    assert second is not first
    assert torch.equal(second.model.state_dict()["text_projection"], replaced["text_projection"])


def test_a_missing_checkpoint_raises_what_to_set_without_calling_open_clip(
    db, media, forbid_open_clip
):
    scorer = Scorer.objects.create(
        label="L/14 file", model_name="ViT-L-14", checkpoint_path="/models/vit_l_14.pt"
    )
    with pytest.raises(ScorerUnavailable) as err:
        scorer_load(scorer)
    assert str(err.value) == (
        "Scorer 'L/14 file': the checkpoint file /models/vit_l_14.pt does not exist. Put the "
        "checkpoint at /models/vit_l_14.pt (on the web and worker machines), or set the scorer's "
        "checkpoint_path to a file that exists."
    )
    assert scorer_weights(scorer).hint == "set checkpoint_path"


def test_missing_tag_weights_fail_fast_and_say_what_to_set(db, media, forbid_open_clip):
    # Given NaturalBench's default scorer and an empty weights cache
    scorer = scorer_ensure_default()
    cache = media / "empty-clip-cache"

    # When it is loaded
    started = time.monotonic()
    with pytest.raises(ScorerUnavailable) as err:
        scorer_load(scorer)

    # Then it fails at once (no network attempt) naming the cache, the repo and both remedies
    assert time.monotonic() - started < 2
    assert str(err.value) == (
        "Scorer 'ViT-L-14 · laion400m_e32 (NaturalBench)': weights for ViT-L-14 / laion400m_e32 "
        f"are not on this machine (looked in {cache} (Hugging Face repo "
        "timm/vit_large_patch14_clip_224.laion400m_e32, file open_clip_pytorch_model.bin)) and "
        "cannot be downloaded here. Either copy that repository into a Hugging Face cache folder, "
        f"set HF_HUB_CACHE (or BLINDSPOT_CLIP_CACHE_DIR) to it (now {cache}) and restart the web "
        "and worker processes; or download the checkpoint elsewhere (https://github.com/mlfoundations/open_clip/releases/download/"
        "v0.2-weights/vit_l_14-laion400m_e32-3d133497.pt), put it on this machine, set the "
        "scorer's checkpoint_path to the file and clear its pretrained tag."
    )
    status = scorer_weights(scorer)
    assert (status.state, status.hint) == ("missing", "set HF_HUB_CACHE or checkpoint_path")


def test_a_tag_found_in_the_local_hub_cache_loads_offline(db, media, settings, monkeypatch):
    # Given a pretrained tag for the tiny model whose file sits in a Hugging Face cache folder
    # (open_clip has no public API to add tags, hence the private registry)
    saved = tiny_state_dict(seed=5)
    hub = media / "hub"
    snapshot = hub / "models--blindspot--tiny-clip" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    torch.save(saved, snapshot / "open_clip_pytorch_model.bin")
    (hub / "models--blindspot--tiny-clip" / "refs").mkdir()
    (hub / "models--blindspot--tiny-clip" / "refs" / "main").write_text("a" * 40)
    register_tiny()
    monkeypatch.setitem(
        open_clip.pretrained._PRETRAINED,
        TINY_MODEL_NAME,
        {"testtag": {"hf_hub": "blindspot/tiny-clip/"}},
    )
    settings.BLINDSPOT_CLIP_CACHE_DIR = str(hub)
    scorer = Scorer.objects.create(
        label="tiny tag", model_name=TINY_MODEL_NAME, model_config=TINY_CONFIG, pretrained="testtag"
    )

    # When the weights are checked and the scorer loaded (the hub is forced offline)
    status = scorer_weights(scorer)
    loaded = scorer_load(scorer)

    # Then the cached file is the one found and loaded
    assert (status.state, status.path) == ("found", str(snapshot / "open_clip_pytorch_model.bin"))
    state = loaded.model.state_dict()
    assert all(torch.equal(state[k], saved[k]) for k in saved)


def test_random_weights_are_the_same_in_every_process(db, media):
    scorer = scorer_tiny()
    first = scorer_load(scorer).model.state_dict()["text_projection"].clone()
    scorers.scorer_unload()
    torch.manual_seed(12345)  # whatever the global generator holds
    second = scorer_load(scorer).model.state_dict()["text_projection"]
    assert torch.equal(first, second)
    status = scorer_weights(scorer)
    assert (status.state, status.message) == ("random", RANDOM_WEIGHTS_LABEL)
    assert RANDOM_WEIGHTS_LABEL == "random weights — scores are not meaningful"


def test_scorer_tiny_and_default_are_idempotent(db, media):
    tiny = scorer_tiny()
    default = scorer_ensure_default()
    assert scorer_tiny().pk == tiny.pk
    assert scorer_ensure_default().pk == default.pk
    assert Scorer.objects.count() == 2
    default.refresh_from_db()
    assert (default.model_name, default.pretrained, default.is_default) == (
        "ViT-L-14",
        "laion400m_e32",
        True,
    )
    assert (tiny.random_weights, tiny.model_name, tiny.device) == (True, TINY_MODEL_NAME, "auto")


@pytest.mark.parametrize(
    "fields, errors",
    [
        (
            {"pretrained": "openai", "checkpoint_path": "/m/b32.pt"},
            {"checkpoint_path": ["Give a pretrained tag or a checkpoint path, not both."]},
        ),
        (
            {"pretrained": "laion400m_e99"},
            {"pretrained": ["open_clip has no tag 'laion400m_e99' for ViT-B-32. Known tags: "]},
        ),
        (
            {"model_name": "ViT-Q-99", "random_weights": True},
            {
                "model_name": [
                    "open_clip has no architecture 'ViT-Q-99'. See open_clip.list_models()."
                ]
            },
        ),
        (
            {"pretrained": "openai", "random_weights": True},
            {
                "random_weights": [
                    "Random weights use no tag and no checkpoint: clear them or untick random "
                    "weights."
                ]
            },
        ),
        (
            {},
            {"pretrained": ["Give a pretrained tag, a checkpoint path, or tick random weights."]},
        ),
        (
            {"checkpoint_path": "models/b32.pt"},
            {"checkpoint_path": ["Give an absolute path (the worker runs in another folder)."]},
        ),
        (
            {"random_weights": True, "batch_size": 0},
            {"batch_size": ["Batch size must be between 1 and 4096."]},
        ),
    ],
)
def test_scorer_create_refuses_what_cannot_work(db, fields, errors):
    args = {"label": "B/32", "model_name": "ViT-B-32", **fields}
    with pytest.raises(ValidationError) as err:
        scorer_create(**args)
    got = err.value.message_dict
    assert sorted(got) == sorted(errors)
    for field, (message,) in errors.items():
        assert got[field][0].startswith(message)
    assert Scorer.objects.count() == 0


def test_changing_a_scorers_weights_deletes_its_cached_embeddings(db, media):
    # Given the tiny scorer with a cached corpus
    tiny = scorer_tiny()
    embed_corpus(scorer=tiny, corpus=make_corpus(ProjectFactory(), COLOURS[:2]))
    folder = cache.scorer_folder(tiny)
    assert EmbeddingCache.objects.filter(scorer=tiny).count() == 2 and folder.is_dir()

    # When only its batch size changes, the cache stays; when its dtype changes, it goes
    scorer_update(scorer=tiny, batch_size=8)
    assert EmbeddingCache.objects.filter(scorer=tiny).count() == 2 and folder.is_dir()
    scorer_update(scorer=tiny, dtype="bf16")

    assert EmbeddingCache.objects.filter(scorer=tiny).count() == 0
    assert not folder.exists()
    tiny.refresh_from_db()
    assert (tiny.dtype, tiny.context_length, tiny.embed_dim) == ("bf16", None, None)
    assert cache.scorer_folder(tiny) != folder


def test_scorer_add_command(db, media):
    out = io.StringIO()
    call_command("scorer_add", "--tiny", stdout=out)
    tiny = Scorer.objects.get(random_weights=True)
    assert out.getvalue() == (
        f"scorer {tiny.pk}: tiny (random weights)\nrandom weights — scores are not meaningful\n"
    )

    out = io.StringIO()
    call_command("scorer_add", stdout=out)
    default = Scorer.objects.get(pretrained="laion400m_e32")
    assert out.getvalue().startswith(
        f"scorer {default.pk}: ViT-L-14 · laion400m_e32 (NaturalBench)\nweights missing — "
    )

    call_command(
        "scorer_add", "--model", "ViT-B-32", "--random-weights", "--batch-size", "8", stdout=out
    )
    b32 = Scorer.objects.get(model_name="ViT-B-32")
    assert (b32.label, b32.batch_size, b32.random_weights) == ("ViT-B-32 · random weights", 8, True)

    with pytest.raises(
        CommandError, match="checkpoint_path: Give a pretrained tag or a checkpoint"
    ):
        call_command(
            "scorer_add", "--model", "ViT-B-32", "--pretrained", "openai", "--checkpoint", "/x.pt"
        )
    assert Scorer.objects.count() == 3


def test_embed_command_embeds_and_refuses_missing_weights(db, media, terminal):
    corpus = make_corpus(ProjectFactory(), COLOURS[:2])
    tiny = scorer_tiny()
    out = io.StringIO()

    call_command("embed", "--scorer", tiny.pk, "--corpus", corpus.pk, stdout=out, stderr=terminal)

    # standard output is the counts alone; the terminal's bar followed the work to its end
    assert json.loads(out.getvalue())["texts"]["embedded"] == 4
    bar = terminal.getvalue()
    assert f"embed corpus #{corpus.pk}" in bar
    assert "Embedding 2 images and 4 texts (tiny (random weights) · Squares)" in bar
    assert "100%" in bar
    assert EmbeddingCache.objects.get(scorer=tiny, modality="text").count == 4
    default = scorer_ensure_default()
    with pytest.raises(CommandError, match="weights for ViT-L-14 / laion400m_e32 are not on"):
        call_command("embed", "--scorer", default.pk, "--corpus", corpus.pk, stdout=out)
    with pytest.raises(CommandError, match="No corpus with id 999999."):
        call_command("embed", "--scorer", tiny.pk, "--corpus", 999999)


def test_the_weights_of_a_scorer_a_pipeline_chose_are_never_changed_under_it(db, media):
    # Given the tiny scorer chosen by a NaturalBench pipeline
    tiny = scorer_tiny()
    project = ProjectFactory()
    pipeline = NaturalBenchPipeline.objects.create(
        project=project, name="mined", corpus=make_corpus(project, COLOURS[:2])
    )
    pipeline.scorers.add(tiny)
    assert scorer_uses(tiny) == ["1 natural bench pipeline"]

    # When its precision or weights would change: refused, the field named, nothing written
    with pytest.raises(ValidationError) as refused:
        scorer_update(scorer=tiny, dtype="bf16")
    assert "used by 1 natural bench pipeline" in refused.value.message_dict["dtype"][0]
    tiny.refresh_from_db()
    assert tiny.dtype == "fp32"

    # Its name and batch size may change (they decide nothing the pipeline mined)
    scorer_update(scorer=tiny, label="tiny, renamed", batch_size=8)
    tiny.refresh_from_db()
    assert (tiny.label, tiny.batch_size) == ("tiny, renamed", 8)
    # and the run's provenance names exactly what scored
    record = scorers.scorer_record(tiny)
    assert (record["model_name"], record["dtype"], record["random_weights"]) == (
        TINY_MODEL_NAME,
        "fp32",
        True,
    )
    assert record["signature"] == cache.scorer_signature(tiny)

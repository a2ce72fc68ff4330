"""Scorer pages: who may use them (refusals change nothing), what they show, forms, embed button."""

import pytest
from django.test import Client
from django.urls import reverse

from annotator.platform import roles
from annotator.platform.models import Job
from curation.embeddings import embed_corpus
from curation.models import Scorer
from curation.scorers import scorer_tiny
from tests.curation.test_embeddings import COLOURS, make_corpus
from tests.factories import ProjectFactory, UserFactory


@pytest.fixture
def media(scorer_media):
    return scorer_media


@pytest.fixture
def world(db, media, curator, researcher, crowdworker, project):
    admin = UserFactory(username="boss", role=roles.ADMIN)
    tiny = scorer_tiny()
    corpus = make_corpus(project, COLOURS[:2])
    hidden = make_corpus(ProjectFactory(), COLOURS[2:4], name="Hidden")
    return {
        "users": {
            "curator": curator,
            "researcher": researcher,
            "crowdworker": crowdworker,
            "admin": admin,
        },
        "tiny": tiny,
        "corpus": corpus,
        "hidden": hidden,
    }


def client_as(user) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def scorer_form(label: str, **fields) -> dict:
    """The new-scorer form for a ViT-B-32 called `label`: fp32 on the automatic device in batches
    of 64 unless `fields` say otherwise."""
    return {
        "label": label,
        "model_name": "ViT-B-32",
        "dtype": "fp32",
        "device": "auto",
        "batch_size": "64",
        **fields,
    }


def requests(world):
    tiny, corpus = world["tiny"], world["corpus"]
    return [
        ("get", reverse("curator-scorers"), {}),
        ("get", reverse("curator-scorer-new"), {}),
        ("get", reverse("curator-scorer-edit", args=[tiny.pk]), {}),
        (
            "post",
            reverse("curator-scorer-new"),
            scorer_form("B/32", random_weights="on", batch_size="8"),
        ),
        ("post", reverse("curator-scorer-default"), {}),
        ("post", reverse("curator-scorer-tiny"), {}),
        ("post", reverse("curator-scorer-embed", args=[tiny.pk]), {"corpus": corpus.pk}),
    ]


@pytest.mark.parametrize("who", ["anonymous", "crowdworker", "researcher"])
def test_only_curators_and_admins_reach_the_scorer_pages(world, who):
    user = world["users"].get(who)
    client = client_as(user)
    before = (Scorer.objects.count(), Job.objects.count())
    for method, url, data in requests(world):
        response = getattr(client, method)(url, data)
        if who == "anonymous":
            assert response.status_code == 302 and response.url.startswith("/login/?next=")
        else:
            assert response.status_code == 404, url
    assert (Scorer.objects.count(), Job.objects.count()) == before


def test_admins_get_every_page(world):
    client = client_as(world["users"]["admin"])
    codes = [getattr(client, m)(url, data).status_code for m, url, data in requests(world)]
    assert codes == [200, 200, 200, 302, 302, 302, 302]


def test_curators_use_the_shared_scorers_but_only_admins_change_them(world, project):
    # given a curator of the project, one of another project and one removed from every project
    other = UserFactory(username="other-curator", role=roles.CURATOR)
    ProjectFactory(members=[other])
    removed = UserFactory(username="removed-curator", role=roles.CURATOR)
    tiny = world["tiny"]
    before = (Scorer.objects.count(), Scorer.objects.values_list("batch_size", flat=True).get())
    for user in (world["users"]["curator"], other, removed):
        client = client_as(user)
        # when they try to add or change a scorer, then it is as if the pages did not exist
        codes = [getattr(client, m)(url, data).status_code for m, url, data in requests(world)]
        # (the list they read; the embed button is test_a_corpus_outside_reach_…'s)
        assert codes[:6] == [200, 404, 404, 404, 404, 404], user.username
        edit = client.post(
            reverse("curator-scorer-edit", args=[tiny.pk]), scorer_form("mine", batch_size="2")
        )
        assert edit.status_code == 404
        # and the list offers no way to change one
        page = client.get(reverse("curator-scorers")).content.decode()
        assert reverse("curator-scorer-edit", args=[tiny.pk]) not in page
        assert "admins add and change them" in page
    assert (Scorer.objects.count(), Scorer.objects.get().batch_size) == before


def test_the_list_shows_models_status_and_cache_counts(world, media, django_assert_num_queries):
    # Given the tiny scorer with a cached corpus (one caption cut at the context length),
    # the NaturalBench default without weights and a scorer whose checkpoint exists
    tiny, corpus = world["tiny"], world["corpus"]
    caption = corpus.samples.first().captions.first()
    caption.text = "word " * 100
    caption.save()
    embed_corpus(scorer=tiny, corpus=corpus)
    client_as(world["users"]["admin"]).post(reverse("curator-scorer-default"))
    client = client_as(world["users"]["curator"])
    path = str(media / "b32.pt")
    (media / "b32.pt").write_bytes(b"not read by the list page")
    Scorer.objects.create(label="B/32 from file", model_name="ViT-B-32", checkpoint_path=path)

    # When a curator opens the list
    with django_assert_num_queries(6):
        response = client.get(reverse("curator-scorers"))

    # Then each scorer's status is spelled out, with cache counts and truncations
    html = response.content.decode()
    assert response.status_code == 200
    assert html.count("random weights — scores are not meaningful") == 1
    assert "weights missing — set HF_HUB_CACHE or checkpoint_path" in html
    assert "weights found" in html and path in html
    texts_row = '<td>Texts</td><td class="num">4</td><td class="num">32</td><td class="num">1</td>'
    assert texts_row in html
    assert '<td>Images</td><td class="num">2</td><td class="num">32</td>' in html
    # … the embed form offers the curator's corpora only
    assert f'<option value="{corpus.pk}"' in html
    assert f'<option value="{world["hidden"].pk}"' not in html
    # … and the weights-missing scorer's embed button is disabled
    assert html.count("disabled") == 1


def test_the_list_page_scales_without_extra_queries(world, django_assert_num_queries):
    for k in range(6):
        Scorer.objects.create(label=f"r{k}", model_name="ViT-B-32", random_weights=True)
    client = client_as(world["users"]["curator"])
    with django_assert_num_queries(6):
        assert client.get(reverse("curator-scorers")).status_code == 200


def test_empty_registry_says_what_to_do(db, media, curator):
    response = client_as(curator).get(reverse("curator-scorers"))
    html = response.content.decode()
    assert "No scorer yet." in html and "Ask an admin" in html
    assert reverse("curator-scorer-tiny") not in html
    admin = UserFactory(username="boss", role=roles.ADMIN)
    html = client_as(admin).get(reverse("curator-scorers")).content.decode()
    assert reverse("curator-scorer-default") in html and reverse("curator-scorer-tiny") in html


def test_adding_a_scorer_through_the_form(world):
    client = client_as(world["users"]["admin"])
    data = scorer_form("CLIP B/32", pretrained="openai", dtype="fp16", device="cpu")
    response = client.post(reverse("curator-scorer-new"), data)
    assert response.status_code == 302 and response.url == reverse("curator-scorers")
    scorer = Scorer.objects.get(label="CLIP B/32")
    assert (scorer.pretrained, scorer.dtype, scorer.device, scorer.batch_size) == (
        "openai",
        "fp16",
        "cpu",
        64,
    )


def test_a_bad_scorer_form_saves_nothing_and_marks_the_field(world):
    client = client_as(world["users"]["admin"])
    data = scorer_form("both", pretrained="openai", checkpoint_path="/m/b32.pt", batch_size="32")
    response = client.post(reverse("curator-scorer-new"), data)
    assert response.status_code == 400
    assert response.context["form"].errors == {
        "checkpoint_path": ["Give a pretrained tag or a checkpoint path, not both."]
    }
    assert not Scorer.objects.filter(label="both").exists()


def test_embed_button_starts_the_job_and_returns_its_progress_card(
    world, eager, django_capture_on_commit_callbacks
):
    client = client_as(world["users"]["curator"])
    url = reverse("curator-scorer-embed", args=[world["tiny"].pk])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"corpus": world["corpus"].pk}, HTTP_HX_REQUEST="true")
    job = Job.objects.get(parent=None)  # the embed job; its chunk jobs are its children
    assert response.status_code == 200
    assert 'id="job-card"' in response.content.decode()
    assert response.context["job"].pk == job.pk
    job.refresh_from_db()
    assert (job.status, job.done, job.total) == ("succeeded", 6, 6)


def test_embed_without_htmx_redirects_to_the_job_page(world):
    client = client_as(world["users"]["curator"])
    response = client.post(
        reverse("curator-scorer-embed", args=[world["tiny"].pk]), {"corpus": world["corpus"].pk}
    )
    job = Job.objects.get()
    assert response.status_code == 302 and response.url == reverse("curator-job", args=[job.pk])


@pytest.mark.parametrize("corpus", ["hidden", "missing", "junk"])
def test_a_corpus_outside_reach_looks_like_a_missing_one(world, corpus):
    ids = {"hidden": world["hidden"].pk, "missing": 999999, "junk": "x"}
    client = client_as(world["users"]["curator"])
    response = client.post(
        reverse("curator-scorer-embed", args=[world["tiny"].pk]),
        {"corpus": ids[corpus]},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    assert response.content.decode().strip() == (
        '<div class="flash flash-error" role="alert" dir="auto">'
        "Choose a corpus of one of your projects.</div>"
    )
    assert Job.objects.count() == 0


def test_embed_with_missing_weights_explains_and_queues_nothing(world):
    client_as(world["users"]["admin"]).post(reverse("curator-scorer-default"))
    client = client_as(world["users"]["curator"])
    default = Scorer.objects.get(pretrained="laion400m_e32")
    response = client.post(
        reverse("curator-scorer-embed", args=[default.pk]),
        {"corpus": world["corpus"].pk},
        HTTP_HX_REQUEST="true",
    )
    assert (
        "weights for ViT-L-14 / laion400m_e32 are not on this machine" in response.content.decode()
    )
    assert Job.objects.count() == 0


def test_unknown_scorer_is_404(world):
    client = client_as(world["users"]["admin"])
    assert client.get(reverse("curator-scorer-edit", args=[999999])).status_code == 404
    response = client.post(reverse("curator-scorer-embed", args=[999999]), {"corpus": 1})
    assert response.status_code == 404

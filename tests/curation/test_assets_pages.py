"""Corpus pages: who may see them, what they show, how many queries they take."""

from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotator.platform import roles
from annotator.platform.models import Job
from curation import assets
from curation import corpora as ci
from curation.models import Corpus, Image
from tests.curation.fixtures_assets import png, zip_bytes
from tests.factories import ProjectFactory, UserFactory

pytestmark = pytest.mark.usefixtures("media")  # tests/conftest.py


def make_corpus(project, n: int = 3, name: str = "Shapes") -> Corpus:
    files, lines = {}, []
    for i in range(n):
        files[f"{i}.png"] = png((16 + i, 12), colour=(20 * i, 100, 200))
        captions = [f"shape number {i} in blue"]
        lines.append({"file": f"{i}.png", "captions": captions, "licence": "CC0-1.0"})
    lines.append(
        {
            "file": "0.png",
            "source_id": "zh-0",
            "captions": [
                {"text": "蓝色的形状", "language": "zh"},
                {"text": "नीला", "language": "hi"},
            ],
        }
    )
    result = ci.corpus_import(
        project=project,
        name=name,
        source=ci.MemorySource(files, label="shapes.zip"),
        manifest="\n".join(json.dumps(x, ensure_ascii=False) for x in lines).encode(),
        manifest_name="m.jsonl",
        licence="CC0-1.0",
        thumbnails="inline",
    )
    return Corpus.objects.get(pk=result["corpus_id"])


def login(client, user):
    client.force_login(user)  # django-axes needs a request: client.login has none
    return client


@pytest.fixture
def corpus(project):
    return make_corpus(project)


@pytest.fixture
def outsider(db):
    """A curator of another project."""
    user = UserFactory(username="other-curator", role=roles.CURATOR)
    ProjectFactory(members=[user])
    return user


def urls(corpus: Corpus) -> list[str]:
    image = corpus.samples.first().image
    return [
        reverse("curator-project-corpora", args=[corpus.project_id]),
        reverse("curator-corpus", args=[corpus.pk]),
        reverse("curator-image", args=[image.pk]),
    ]


# ---------------------------------------------------------------------------------------------
# permissions: out of reach answers like missing
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("who", ["crowdworker", "researcher", "outsider"])
def test_pages_are_404_out_of_reach(client, corpus, who, request):
    login(client, request.getfixturevalue(who))

    for url in urls(corpus):
        assert client.get(url).status_code == 404, url


def test_refused_import_post_changes_nothing(client, corpus, outsider, crowdworker):
    for user in (outsider, crowdworker):
        login(client, user)
        response = client.post(
            reverse("curator-project-corpora", args=[corpus.project_id]),
            {"name": "X", "archive": SimpleUploadedFile("a.zip", zip_bytes({"a.png": png()}))},
        )
        assert response.status_code == 404
    assert (Corpus.objects.count(), Job.objects.count()) == (1, 0)


def test_anonymous_is_sent_to_login(client, corpus):
    response = client.get(reverse("curator-corpus", args=[corpus.pk]))

    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_outsider_sees_only_their_own_projects_in_the_corpora_list(client, corpus, outsider):
    login(client, outsider)

    response = client.get(reverse("curator-corpora"))

    assert response.status_code == 200
    assert corpus.name not in response.content.decode()


def test_admin_reaches_every_page(client, corpus):
    admin = UserFactory(username="boss", role=roles.ADMIN)
    login(client, admin)

    assert [client.get(u).status_code for u in urls(corpus)] == [200, 200, 200]


# ---------------------------------------------------------------------------------------------
# what the pages show
# ---------------------------------------------------------------------------------------------
def test_corpus_list_shows_counts_languages_and_thumbnails(
    client, curator, project, django_assert_max_num_queries
):
    make_corpus(project, n=3, name="Shapes")
    make_corpus(project, n=2, name="More shapes")
    login(client, curator)

    with django_assert_max_num_queries(8):
        response = client.get(reverse("curator-project-corpora", args=[project.pk]))

    html = response.content.decode()
    assert response.status_code == 200
    assert "<strong>4</strong> samples" in html and "<strong>3</strong> samples" in html
    assert "<strong>5</strong> captions" in html and "<strong>4</strong> captions" in html
    assert 'data-lang="zh"' in html and ">zh · 1<" in html
    assert html.count('src="/media/thumbs/') == 7  # four previews of Shapes, three of More
    assert 'id="import"' in html


def test_all_corpora_page_groups_by_project(client, curator, project, corpus):
    login(client, curator)

    response = client.get(reverse("curator-corpora"))

    html = response.content.decode()
    assert response.status_code == 200
    assert project.name in html and "Shapes" in html
    assert reverse("curator-project-corpora", args=[project.pk]) + "#import" in html


def test_empty_project_says_what_to_do(client, curator, project):
    login(client, curator)

    html = client.get(reverse("curator-project-corpora", args=[project.pk])).content.decode()

    assert "This project has no corpus yet" in html
    assert "manifest.jsonl or manifest.csv" in html


def test_corpus_page_shows_captions_with_lang_and_dir(
    client, curator, corpus, django_assert_max_num_queries
):
    login(client, curator)

    with django_assert_max_num_queries(8):
        response = client.get(reverse("curator-corpus", args=[corpus.pk]))

    html = response.content.decode()
    assert response.status_code == 200
    assert '<span dir="auto" lang="zh">蓝色的形状</span>' in html
    assert '<span dir="auto" lang="hi">नीला</span>' in html
    assert '<span dir="auto" lang="en">shape number 2 in blue</span>' in html
    assert html.count('class="card sample"') == 4
    assert "4 samples" in html
    # the language filter lists this corpus's caption languages with counts (not the site's)
    assert re.findall(r'data-lang="([\w-]+)">[\w-]+</span><span class="n">(\d+)<', html) == [
        ("en", "3"),
        ("hi", "1"),
        ("zh", "1"),
    ]
    assert '<option value="zh">zh (1)</option>' in html


def test_corpus_page_queries_do_not_grow_with_samples(
    client, curator, project, django_assert_max_num_queries
):
    big = make_corpus(project, n=30, name="Big")
    login(client, curator)

    with django_assert_max_num_queries(8):
        response = client.get(reverse("curator-corpus", args=[big.pk]))

    assert response.content.decode().count('class="card sample"') == 24  # one page


def test_search_and_language_filter(client, curator, corpus):
    login(client, curator)
    url = reverse("curator-corpus", args=[corpus.pk])

    by_text = client.get(url, {"q": "NUMBER 1"}).content.decode()
    by_lang = client.get(url, {"lang": "zh"}).content.decode()
    nothing = client.get(url, {"q": "giraffe"}).content.decode()

    assert "1 sample matches" in by_text
    assert 'class="caption hit"' in by_text and "shape number 1 in blue" in by_text
    assert "1 sample matches" in by_lang and "蓝色的形状" in by_lang
    assert (
        by_lang.count('class="caption hit"') == 1
    )  # the hi caption of that sample is shown, unmarked
    assert "No caption matches" in nothing and "Clear the search" in nothing


def test_htmx_search_returns_only_the_sample_list(client, curator, corpus):
    login(client, curator)

    response = client.get(
        reverse("curator-corpus", args=[corpus.pk]), {"q": "blue"}, HTTP_HX_REQUEST="true"
    )

    html = response.content.decode()
    assert html.startswith('<div id="samples">')
    assert "<html" not in html
    assert "3 samples match" in html


def test_pager_keeps_the_search(client, curator, project):
    big = make_corpus(project, n=30, name="Big")
    login(client, curator)

    html = client.get(reverse("curator-corpus", args=[big.pk]), {"q": "blue"}).content.decode()

    assert 'href="?q=blue&amp;page=2"' in html
    assert "Page 1 of 2" in html


def test_image_page_shows_provenance_and_derivatives(client, curator, corpus):
    image = corpus.samples.get(position=0).image
    child, _ = assets.image_from_array(
        array=assets.image_as_array(image) * 0.5,
        name="dark",
        derived_from=image,
        derivation={"op": "darken", "params": {"factor": 0.5}},
    )
    login(client, curator)

    parent_html = client.get(reverse("curator-image", args=[image.pk])).content.decode()
    child_html = client.get(reverse("curator-image", args=[child.pk])).content.decode()

    assert image.sha256 in parent_html
    assert "CC0-1.0" in parent_html
    assert reverse("curator-image", args=[child.pk]) in parent_html
    assert ">darken<" in parent_html
    assert reverse("curator-image", args=[image.pk]) in child_html  # link back to the parent
    assert "&quot;factor&quot;: 0.5" in child_html
    assert re.search(r"Derivatives <span class=\"muted small\">1</span>", parent_html)


def test_image_outside_every_corpus_is_404_for_a_curator(client, curator, corpus):
    loose, _ = assets.image_ingest(data=png((5, 5)), name="loose.png")
    login(client, curator)

    assert client.get(reverse("curator-image", args=[loose.pk])).status_code == 404


# ---------------------------------------------------------------------------------------------
# the import form
# ---------------------------------------------------------------------------------------------
def test_import_form_starts_a_job_and_the_page_shows_its_card(
    client, curator, project, django_capture_on_commit_callbacks
):
    login(client, curator)
    url = reverse("curator-project-corpora", args=[project.pk])
    manifest = b'{"file": "a.png", "caption": "a red square"}\n'
    archive = zip_bytes({"a.png": png(), "manifest.jsonl": manifest})

    with django_capture_on_commit_callbacks(execute=False):
        response = client.post(
            url,
            {
                "name": "Uploaded",
                "archive": SimpleUploadedFile("set.zip", archive),
                "format": "auto",
                "language": "en",
            },
        )

    job = Job.objects.get()
    assert response.status_code == 302 and response["Location"] == url
    assert (job.kind, job.status, job.total, job.project_id) == (
        "curation.import_corpus",
        "queued",
        2,
        project.pk,
    )
    page = client.get(url).content.decode()
    assert 'id="job-card"' in page and "every 1s" in page
    assert "?part=table" in page  # the corpus list polls while the import runs
    table = client.get(url, {"part": "table"}, HTTP_HX_REQUEST="true").content.decode()
    assert table.startswith('<div id="corpora-table" hx-get=')


def test_import_form_shows_line_errors_and_starts_nothing(client, curator, project):
    login(client, curator)
    manifest = b'{"file": "a.png", "caption": "ok"}\n{"file": "b.png"}\n'

    response = client.post(
        reverse("curator-project-corpora", args=[project.pk]),
        {
            "name": "Broken",
            "archive": SimpleUploadedFile("set.zip", zip_bytes({"a.png": png()})),
            "manifest": SimpleUploadedFile("m.jsonl", manifest),
            "format": "auto",
            "language": "en",
        },
    )

    html = response.content.decode()
    assert response.status_code == 400
    assert "1 problem(s) in m.jsonl; nothing was imported." in html
    assert '<td class="num">2</td>' in html
    assert Job.objects.count() == 0 and Image.objects.count() == 0


def test_import_form_requires_an_archive(client, curator, project):
    login(client, curator)

    response = client.post(
        reverse("curator-project-corpora", args=[project.pk]),
        {"name": "No files", "format": "auto", "language": "en"},
    )

    assert response.status_code == 400
    assert "This field is required." in response.content.decode()
    assert Job.objects.count() == 0

"""LLM gateway pages: roles, templates (versions, diff, edit), providers (test connection),
generations log (filters, pagination, query counts) and detail."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotator.platform import roles
from curation import gateway
from curation.models import Generation, LLMProvider, PromptTemplate
from tests.factories import ProjectFactory, UserFactory
from tests.fake_openai import reply

pytestmark = pytest.mark.django_db


def _client(client, user):
    client.force_login(user)  # django-axes needs a request: client.login has none
    return client


@pytest.fixture
def curator_client(client, curator, project):
    return _client(client, curator)


@pytest.fixture
def editor():
    """Templates are shared by every project: admins edit them."""
    return UserFactory(username="template-admin", role=roles.ADMIN)


@pytest.fixture
def editor_client(client, editor):
    return _client(client, editor)


def _gen(project, **kw) -> Generation:
    defaults = dict(
        project=project,
        provider_kind="openai",
        template_name="caption-shorten",
        template_version=1,
        purpose="demo.shorten",
        messages=[{"role": "user", "content": "hi"}],
        model="m",
        status="ok",
        output={"answer": "yes"},
        latency_ms=12,
    )
    return Generation.objects.create(**{**defaults, **kw})


# ---------------------------------------------------------------------------------------------
# roles
# ---------------------------------------------------------------------------------------------
READ_PAGES = ["curator-llm-templates", "curator-llm-generations"]
CURATOR_PAGES = ["curator-llm-providers", "curator-llm-provider-new"]
ADMIN_PAGES = ["curator-llm-template-new"]


@pytest.mark.parametrize("role", [roles.CROWDWORKER, roles.RESEARCHER, roles.CURATOR, roles.ADMIN])
@pytest.mark.parametrize("name", READ_PAGES + CURATOR_PAGES + ADMIN_PAGES)
def test_role_matrix(client, role, name):
    user = UserFactory(role=role)
    allowed = (
        role == roles.ADMIN
        or (role == roles.CURATOR and name not in ADMIN_PAGES)
        or (role == roles.RESEARCHER and name in READ_PAGES)
    )

    response = _client(client, user).get(reverse(name))

    assert response.status_code == (200 if allowed else 404)


def test_anonymous_users_go_to_login(client):
    response = client.get(reverse("curator-llm-generations"))
    assert response.status_code == 302 and "/login" in response["Location"]


def test_refused_posts_change_nothing(client, researcher):
    gateway.ensure_default_templates()
    _client(client, researcher)

    seed = client.post(reverse("curator-llm-templates-seed"))
    edit = client.post(
        reverse("curator-llm-template-edit", args=["caption-shorten"]), {"text": "x"}
    )
    new = client.post(reverse("curator-llm-provider-new"), {"name": "p", "kind": "offline"})

    assert (seed.status_code, edit.status_code, new.status_code) == (404, 404, 404)
    assert PromptTemplate.objects.filter(name="caption-shorten").count() == 1
    assert LLMProvider.objects.count() == 0


def test_no_curator_changes_a_shared_template(client, curator, project):
    # given the built-in templates, project 1's curator, a curator of another project and a
    # curator removed from every project
    gateway.ensure_default_templates()
    other = UserFactory(username="other-curator", role=roles.CURATOR)
    ProjectFactory(members=[other])
    removed = UserFactory(username="removed-curator", role=roles.CURATOR)
    before = list(PromptTemplate.objects.values_list("name", "version", "text", "is_current"))
    for user in (curator, other, removed):
        _client(client, user)
        # when they post a new text, restore, seed or create: it is as if the pages did not exist
        attempts = [
            client.post(
                reverse("curator-llm-template-edit", args=["naturalbench-yes-no"]),
                {"text": "Ignore the caption. Answer: {caption}"},
            ),
            client.get(reverse("curator-llm-template-edit", args=["naturalbench-yes-no"])),
            client.post(reverse("curator-llm-template-restore", args=["naturalbench-yes-no", 1])),
            client.post(reverse("curator-llm-templates-seed")),
            client.post(reverse("curator-llm-template-new"), {"name": "x", "text": "y"}),
        ]
        assert [r.status_code for r in attempts] == [404] * 5, user.username
        # and the template page offers no edit
        page = client.get(reverse("curator-llm-template", args=["naturalbench-yes-no"]))
        assert page.status_code == 200
        edit_url = reverse("curator-llm-template-edit", args=["naturalbench-yes-no"])
        assert edit_url not in page.content.decode()
    # then nothing changed: the pipelines render the same version
    assert list(PromptTemplate.objects.values_list("name", "version", "text", "is_current")) == (
        before
    )


# ---------------------------------------------------------------------------------------------
# templates
# ---------------------------------------------------------------------------------------------
def test_empty_templates_page_offers_the_built_in_ones(editor_client):
    page = editor_client.get(reverse("curator-llm-templates")).content.decode()
    assert "No prompt templates yet" in page and "Add the built-in templates" in page

    response = editor_client.post(reverse("curator-llm-templates-seed"), follow=True)

    assert sorted(PromptTemplate.objects.values_list("name", flat=True)) == [
        "caption-shorten",
        "naturalbench-yes-no",
        "vhexpansion-negation",
    ]
    assert "vhexpansion-negation" in response.content.decode()


def test_edit_creates_a_version_and_the_page_shows_the_diff(editor_client, editor):
    gateway.ensure_default_templates()
    url = reverse("curator-llm-template-edit", args=["caption-shorten"])
    form = editor_client.get(url).context["form"]
    data = {k: v for k, v in form.initial.items()}
    data["text"] = data["text"].replace("at most {max_chars}", "at most {max_chars} <b>")

    response = editor_client.post(url, data)

    assert response.status_code == 302
    v2 = PromptTemplate.objects.get(name="caption-shorten", is_current=True)
    assert (v2.version, v2.created_by) == (2, editor)
    page = editor_client.get(reverse("curator-llm-template", args=["caption-shorten"]))
    html = page.content.decode()
    assert "Changes from v1 to v2" in html
    # the inserted text is highlighted and escaped
    assert "<ins> &lt;b&gt;</ins>" in html
    assert "<b>" not in html.split("Changes from v1 to v2")[1]
    assert page.context["diff"][1]["stats"] == {"changed": 1, "deleted": 0, "inserted": 0}
    assert page.context["diff"][0]["same"] and page.context["diff"][2]["same"]


def test_edit_with_bad_schema_or_braces_saves_nothing(editor_client):
    gateway.ensure_default_templates()
    url = reverse("curator-llm-template-edit", args=["caption-shorten"])

    bad_json = editor_client.post(url, {"text": "Shorten {caption}", "output_schema": "{nope"})
    bad_brace = editor_client.post(url, {"text": "Shorten {caption", "output_schema": ""})
    bad_schema = editor_client.post(url, {"text": "x {caption}", "output_schema": '{"type": 3}'})

    assert (
        bad_json.status_code == 200
        and "Not valid JSON: Expecting property name enclosed in double quotes (column 2)"
        in (bad_json.content.decode())
    )
    assert "Write literal braces as {{ and }}" in bad_brace.content.decode()
    assert "Not a valid JSON Schema" in bad_schema.content.decode()
    assert PromptTemplate.objects.filter(name="caption-shorten").count() == 1


def test_new_template_and_restore(editor_client):
    response = editor_client.post(
        reverse("curator-llm-template-new"),
        {"name": "my-prompt", "text": "Describe {thing}.", "output_schema": ""},
    )
    assert response.status_code == 302
    gateway.template_update(name="my-prompt", text="Describe {thing} briefly.")

    restored = editor_client.post(
        reverse("curator-llm-template-restore", args=["my-prompt", 1]), follow=True
    )

    current = gateway.template_current("my-prompt")
    assert (current.version, current.text) == (3, "Describe {thing}.")
    assert "Version 1 is current again as version 3." in restored.content.decode()


def test_unknown_template_or_version_is_404(curator_client):
    gateway.ensure_default_templates()
    assert curator_client.get(reverse("curator-llm-template", args=["nope"])).status_code == 404
    url = reverse("curator-llm-template", args=["caption-shorten"])
    assert curator_client.get(url + "?v=9").status_code == 404
    assert curator_client.get(url + "?v=abc").status_code == 404
    assert curator_client.get(url + "?a=x&b=y").status_code == 200


# ---------------------------------------------------------------------------------------------
# providers
# ---------------------------------------------------------------------------------------------
def test_add_provider_never_shows_the_key(curator_client, project):
    response = curator_client.post(
        reverse("curator-llm-provider-new"),
        {
            "project": project.pk,
            "name": "vllm",
            "kind": "openai",
            "base_url": "http://127.0.0.1:8000/v1",
            "model": "qwen",
            "api_key": "sk-very-secret",
            "temperature": 0,
            "max_tokens": 256,
            "timeout_s": 30,
            "max_retries": 2,
            "concurrency": 3,
            "is_default": "on",
        },
    )

    assert response.status_code == 302
    provider = LLMProvider.objects.get(name="vllm")
    assert (provider.api_key, provider.project, provider.is_default) == (
        "sk-very-secret",
        project,
        True,
    )
    listing = curator_client.get(reverse("curator-llm-providers")).content.decode()
    edit = curator_client.get(reverse("curator-llm-provider-edit", args=[provider.pk]))
    assert "sk-very-secret" not in listing and "stored (hidden)" in listing
    assert "sk-very-secret" not in edit.content.decode()


def test_editing_keeps_the_key_unless_replaced_or_cleared(curator_client, project):
    provider = LLMProvider.objects.create(
        project=project, name="p", base_url="http://x/v1", model="m", api_key="sk-1"
    )
    url = reverse("curator-llm-provider-edit", args=[provider.pk])
    base = {
        "project": project.pk,
        "name": "p",
        "kind": "openai",
        "base_url": "http://x/v1",
        "model": "m2",
        "temperature": 0.5,
        "max_tokens": 10,
        "timeout_s": 5,
        "max_retries": 1,
        "concurrency": 1,
    }

    curator_client.post(url, base)
    provider.refresh_from_db()
    assert (provider.api_key, provider.model) == ("sk-1", "m2")

    curator_client.post(url, {**base, "api_key": "env:OPENAI_API_KEY"})
    provider.refresh_from_db()
    assert provider.api_key == "env:OPENAI_API_KEY"

    bad = curator_client.post(url, {**base, "api_key": "env:DATABASE_URL"})
    assert "names end in API_KEY" in bad.content.decode()

    curator_client.post(url, {**base, "clear_api_key": "on"})
    provider.refresh_from_db()
    assert provider.api_key == ""


def test_shared_providers_are_visible_but_only_admins_edit_them(curator_client, client):
    shared = LLMProvider.objects.create(name="shared", base_url="http://x/v1", model="m")
    other = LLMProvider.objects.create(
        project=ProjectFactory(), name="theirs", base_url="http://y/v1", model="m"
    )

    listing = curator_client.get(reverse("curator-llm-providers")).content.decode()

    assert "shared" in listing and "theirs" not in listing
    assert (
        curator_client.get(reverse("curator-llm-provider-edit", args=[shared.pk])).status_code
        == 404
    )
    assert (
        curator_client.post(reverse("curator-llm-provider-test", args=[other.pk])).status_code
        == 404
    )
    admin = UserFactory(role=roles.ADMIN)
    _client(client, admin)
    assert client.get(reverse("curator-llm-provider-edit", args=[shared.pk])).status_code == 200


def test_test_connection_succeeds_against_the_fake_server(curator_client, project, fake_openai):
    provider = LLMProvider.objects.create(
        project=project, name="fake", base_url=fake_openai.base_url, model="fake-model"
    )

    response = curator_client.post(
        reverse("curator-llm-provider-test", args=[provider.pk]), HTTP_HX_REQUEST="true"
    )

    assert response.status_code == 200
    html = response.content.decode()
    assert "✓" in html and "Connected: 1 models offered, including &#x27;fake-model&#x27;." in html
    assert fake_openai.requests[0]["method"] == "GET"
    assert fake_openai.requests[0]["path"] == "/v1/models"


def test_test_connection_reports_a_down_endpoint_without_a_500(curator_client, project):
    provider = LLMProvider.objects.create(
        project=project, name="down", base_url="http://127.0.0.1:9/v1", model="m", timeout_s=2
    )

    htmx = curator_client.post(
        reverse("curator-llm-provider-test", args=[provider.pk]), HTTP_HX_REQUEST="true"
    )
    plain = curator_client.post(
        reverse("curator-llm-provider-test", args=[provider.pk]), follow=True
    )

    assert htmx.status_code == 200 and '✗ <span dir="auto">APIConnectionError' in (
        htmx.content.decode()
    )
    assert plain.status_code == 200 and "down: APIConnectionError" in plain.content.decode()


def test_test_connection_flags_a_missing_model(curator_client, project, fake_openai):
    provider = LLMProvider.objects.create(
        project=project, name="fake", base_url=fake_openai.base_url, model="other-model"
    )

    response = curator_client.post(
        reverse("curator-llm-provider-test", args=[provider.pk]), HTTP_HX_REQUEST="true"
    )

    assert "is not among the 1 models offered (fake-model)" in response.content.decode()


# ---------------------------------------------------------------------------------------------
# generations log
# ---------------------------------------------------------------------------------------------
def test_log_filters(curator_client, project):
    offline = gateway.provider_offline()
    fake = LLMProvider.objects.create(project=project, name="fake", base_url="http://x/v1")
    a = _gen(project, provider=fake, purpose="nb.yes_no", template_name="naturalbench-yes-no")
    b = _gen(project, provider=fake, status="failed", output=None, error="boom", purpose="vh.neg")
    c = _gen(project, provider=offline, provider_kind="offline", purpose="nb.mc")
    hidden = _gen(ProjectFactory(), purpose="nb.secret")
    url = reverse("curator-llm-generations")

    def ids(query: str) -> list[int]:
        response = curator_client.get(url + query)
        assert response.status_code == 200
        return [g["id"] for g in response.context["page"].object_list]

    assert ids("") == [c.pk, b.pk, a.pk]
    assert hidden.pk not in ids("?purpose=nb.")
    assert ids("?purpose=nb.") == [c.pk, a.pk]
    assert ids("?status=failed") == [b.pk]
    assert ids("?offline=yes") == [c.pk]
    assert ids("?offline=no") == [b.pk, a.pk]
    assert ids(f"?provider={fake.pk}") == [b.pk, a.pk]
    # not a template yet: the choice is refused with a message and the filter left out
    refused = curator_client.get(url + "?template=naturalbench-yes-no")
    assert list(refused.context["form"].errors) == ["template"]
    assert len(refused.context["page"].object_list) == 3
    gateway.ensure_default_templates()
    assert ids("?template=naturalbench-yes-no") == [a.pk]
    # nonsense filter values are reported, not a 500
    response = curator_client.get(url + "?provider=abc&status=weird")
    assert response.status_code == 200 and response.context["form"].errors.keys() == {
        "provider",
        "status",
    }


def test_log_labels_offline_output_and_shows_errors(curator_client, project):
    _gen(project, provider_kind="offline", output="Is there no dog?")
    _gen(project, status="failed", output=None, error="Failed after 4 attempts (malformed)")

    html = curator_client.get(reverse("curator-llm-generations")).content.decode()

    assert "offline drafter" in html
    assert "Failed after 4 attempts (malformed)" in html
    assert "&quot;Is there no dog?&quot;" in html


def test_log_query_count_does_not_grow_with_rows(
    curator_client, project, django_assert_max_num_queries
):
    provider = LLMProvider.objects.create(project=project, name="p", base_url="http://x/v1")
    for i in range(3):
        _gen(project, provider=provider, purpose=f"p{i}")
    url = reverse("curator-llm-generations")
    curator_client.get(url)  # warm the session

    with django_assert_max_num_queries(9) as few:
        curator_client.get(url)
    for i in range(60):
        _gen(project, provider=provider, purpose=f"q{i}")
    with django_assert_max_num_queries(len(few.captured_queries)):
        response = curator_client.get(url + "?page=2")
    assert len(response.context["page"].object_list) == 13


def test_log_pagination_keeps_filters(curator_client, project):
    for _ in range(55):
        _gen(project, purpose="bulk")

    html = curator_client.get(reverse("curator-llm-generations") + "?purpose=bulk").content.decode()

    assert "?purpose=bulk&amp;page=2" in html
    assert "Page 1 of 2 · 55 in all" in html


def test_generation_detail_shows_the_whole_record(curator_client, project, fake_openai):
    provider = LLMProvider.objects.create(
        project=project,
        name="fake",
        base_url=fake_openai.base_url,
        model="fake-model",
        max_retries=1,
    )
    fake_openai.script(
        reply("not json at all"),
        reply(
            '{"0": {"Question": "Is there a dog?", "Caption1 Answer": "Yes", '
            '"Caption2 Answer": "No"}, "1": {"Question": "Is there a cat?", '
            '"Caption1 Answer": "No", "Caption2 Answer": "Yes"}}',
            logprobs=[("{", -0.01, [("{", -0.01), ("Sure", -4.6)])],
        ),
    )
    gen = gateway.generate(
        template="naturalbench-yes-no",
        variables={"caption_1": "A dog <script>", "caption_2": "A cat"},
        project=project,
        provider=provider,
        purpose="nb.yes_no",
        seed=3,
        logprobs=True,
    )

    response = curator_client.get(reverse("curator-llm-generation", args=[gen.pk]))

    html = response.content.decode()
    assert response.status_code == 200
    for expected in (
        "naturalbench-yes-no</code> v1",
        gen.template_sha256,
        "fake-model",
        "not json at all",
        "malformed",
        "Is there a cat?",
        "20 in · 10 out (all attempts)",
        "Sure",
        "A dog &lt;script&gt;",
    ):
        assert expected in html, expected
    assert "<script>" not in html.split("<main")[1]


def test_generation_out_of_reach_is_404(curator_client):
    hidden = _gen(ProjectFactory())
    url = reverse("curator-llm-generation", args=[hidden.pk])
    assert curator_client.get(url).status_code == 404


def test_test_connection_falls_back_to_a_tiny_completion(curator_client, project, fake_openai):
    # given a server that lists no models
    fake_openai.models = []
    fake_openai.script(reply("pong"))
    provider = LLMProvider.objects.create(
        project=project, name="fake", base_url=fake_openai.base_url, model="m"
    )

    response = curator_client.post(
        reverse("curator-llm-provider-test", args=[provider.pk]), HTTP_HX_REQUEST="true"
    )

    assert "Connected: a one-token completion with &#x27;m&#x27; answered." in (
        response.content.decode()
    )
    assert fake_openai.chat_requests[0]["body"]["max_tokens"] == 1

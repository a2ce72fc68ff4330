"""The crowdworker workspace in Simplified Chinese and Hindi (locale/ catalogs)."""

import pytest
from django.conf import settings
from django.test import Client
from django.urls import reverse
from django.utils import translation

from annotator import kinds, services
from annotator.models import Profile
from tests.factories import PASSWORD, TaskFactory, pair_payload


@pytest.fixture
def worker_client(client, crowdworker):
    client.force_login(crowdworker)  # django-axes needs a request: client.login has none
    return client


def set_language(client, code: str) -> None:
    resp = client.post(reverse("set_language"), {"language": code, "next": "/"})
    assert resp.status_code == 302
    assert client.cookies[settings.LANGUAGE_COOKIE_NAME].value == code


@pytest.mark.django_db
def test_home_in_chinese_via_language_switcher(worker_client, queue):
    set_language(worker_client, "zh-hans")
    html = worker_client.get(reverse("home")).content.decode()
    assert '<html lang="zh-hans"' in html
    assert "您好，worker" in html
    assert "可用队列" in html
    assert "今日已标注" in html
    assert "退出登录" in html
    assert "Available queues" not in html


@pytest.mark.django_db
def test_work_page_in_chinese(worker_client, queue):
    TaskFactory(queue=queue)
    set_language(worker_client, "zh-hans")
    html = worker_client.get(reverse("work", args=[queue.pk])).content.decode()
    assert "跳过" in html
    assert "报告问题" in html
    assert "键盘快捷键" in html
    assert "无法回答" in html  # the vqa_choice "Unanswerable" option
    assert "提交" in html
    assert "Keyboard shortcuts" not in html


@pytest.mark.django_db
def test_work_page_in_hindi_via_accept_language(worker_client, queue):
    TaskFactory(queue=queue)
    html = worker_client.get(
        reverse("work", args=[queue.pk]), HTTP_ACCEPT_LANGUAGE="hi"
    ).content.decode()
    assert '<html lang="hi"' in html
    assert "छोड़ें" in html
    assert "समस्या बताएँ" in html
    assert "कीबोर्ड शॉर्टकट" in html
    assert "उत्तर देना संभव नहीं" in html
    assert "जमा करें" in html


@pytest.mark.django_db
def test_kind_key_labels_translated_in_help(worker_client, project):
    queue = project.queues.create(kind="pair_verify", title="Pairs", redundancy=1, max_redundancy=1)
    TaskFactory(queue=queue, payload=pair_payload(1), required=1)
    set_language(worker_client, "hi")
    html = worker_client.get(reverse("work", args=[queue.pk])).content.decode()
    assert "हाँ, एक कैप्शन दोनों पर सही बैठता है: हटाएँ" in html  # Key label from kinds.py
    assert "नहीं: जोड़ी रखें" in html


@pytest.mark.django_db
def test_empty_queue_message_translated_on_page(worker_client, queue):
    set_language(worker_client, "zh-hans")
    html = worker_client.get(reverse("work", args=[queue.pk])).content.decode()
    assert "此队列中已没有可供您处理的任务。谢谢！" in html
    assert "返回队列列表" in html


@pytest.mark.django_db
def test_service_messages_translated(queue, crowdworker):
    with translation.override("hi"):
        claim = services.assignment_claim(queue=queue, annotator=crowdworker)
    assert claim.assignment is None
    assert claim.message == "इस कतार में आपके लिए और कोई कार्य नहीं है। धन्यवाद!"
    with translation.override("zh-hans"):
        claim = services.assignment_claim(queue=queue, annotator=crowdworker)
    assert claim.message == "此队列中已没有可供您处理的任务。谢谢！"
    with translation.override("en"):
        claim = services.assignment_claim(queue=queue, annotator=crowdworker)
    assert claim.message == "No more tasks for you in this queue. Thank you!"


def test_kind_labels_and_placeholders():
    with translation.override("zh-hans"):
        assert translation.gettext(kinds.get_kind("write_text").label) == "撰写文本"
        assert translation.gettext("Hello, %(name)s") % {"name": "x"} == "您好，x"
    with translation.override("hi"):
        assert translation.gettext(kinds.get_kind("review").label) == "समीक्षा (स्वीकार / अस्वीकार)"
        msg = translation.gettext(
            "You answered %(c)d of %(n)d qualification items correctly (%(acc)d%%); "
            "this queue asks for %(min)d%%."
        ) % {"c": 3, "n": 4, "acc": 75, "min": 80}
        assert msg == "आपने 4 योग्यता प्रश्नों में से 3 का सही उत्तर दिया (75%); इस कतार के लिए 80% आवश्यक है।"
        assert (
            translation.ngettext(
                "Checking again every %(s)s second.", "Checking again every %(s)s seconds.", 5
            )
            % {"s": 5}
            == "हर 5 सेकंड में फिर से जाँच की जा रही है।"
        )


@pytest.mark.django_db
def test_language_is_kept_on_the_profile_and_restored_at_login(worker_client, crowdworker):
    # Given a signed-in worker who picks Hindi
    set_language(worker_client, "hi")
    assert Profile.objects.get(user=crowdworker).language == "hi"
    # When they log in from a fresh browser (no language cookie)
    fresh = Client()
    resp = fresh.post(reverse("login"), {"username": crowdworker.username, "password": PASSWORD})
    # Then the interface is in Hindi at once
    assert resp.status_code == 302
    assert fresh.cookies[settings.LANGUAGE_COOKIE_NAME].value == "hi"
    assert '<html lang="hi"' in fresh.get(reverse("home")).content.decode()


@pytest.mark.django_db
def test_language_chosen_signed_out_or_unknown_touches_no_profile(client, crowdworker):
    client.post(reverse("set_language"), {"language": "zh-hans", "next": "/"})
    client.force_login(crowdworker)
    client.post(reverse("set_language"), {"language": "xx", "next": "/"})
    assert not Profile.objects.filter(user=crowdworker).exists()
    # A login with no profile language leaves the browser's own choice alone.
    resp = Client().post(reverse("login"), {"username": crowdworker.username, "password": PASSWORD})
    assert settings.LANGUAGE_COOKIE_NAME not in resp.cookies

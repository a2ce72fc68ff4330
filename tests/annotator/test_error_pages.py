"""404 and 500 pages in production (DEBUG off): no URL pattern listing, a way back."""

from django.template import loader
from django.test import Client, override_settings
from django.urls import reverse


@override_settings(DEBUG=False)
def test_a_reused_invitation_link_answers_the_404_page(db):
    response = Client().get(reverse("invite-accept", args=["no-such-token"]))
    html = response.content.decode()
    assert response.status_code == 404
    assert "Nothing here" in html and "An invitation link works once" in html
    assert "URLconf" not in html and "curate/" not in html


@override_settings(DEBUG=False)
def test_404_for_a_signed_in_curator_links_home(client, curator):
    client.force_login(curator)
    response = client.get("/curate/queues/999999/")
    assert response.status_code == 404 and reverse("home") in response.content.decode()


def test_500_page_renders_without_a_request():
    html = loader.get_template("500.html").render({})
    assert "Something went wrong" in html

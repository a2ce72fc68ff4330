"""The fake server's deterministic vision and blind players (tests/fake_openai.py) through the
real openai client."""

import time

import openai

from tests.fake_openai import VLMPlayers


def _ask(fake, model, text, image=None):
    client = openai.OpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0)
    content = [{"type": "text", "text": text}]
    if image:
        content.append({"type": "image_url", "image_url": {"url": image}})
    response = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": content}]
    )
    return response.choices[0].message.content


def test_vision_players_answer_by_image_and_blind_ones_by_text_alone(fake_openai):
    players = VLMPlayers(delay=0.05, fixed={"yes-man": "Yes"})
    fake_openai.default = players
    q = "Is the mug red?Please answer Yes or No."
    images = [f"data:image/png;base64,{k}" for k in ("AAAA", "BBBB", "CCCC", "DDDD")]
    started = time.monotonic()
    answers = [_ask(fake_openai, "target-a", q, image) for image in images]
    # Then each answer is what the player says it is, and it waited the delay each time
    assert answers == [f"{players.answer('target-a', q, [i])}." for i in images]
    assert time.monotonic() - started >= 4 * 0.05
    assert len(set(answers)) == 2  # it does look at the image: both answers occur
    assert _ask(fake_openai, "target-a", q, images[0]) == answers[0]  # deterministic
    blind = {_ask(fake_openai, "blind", q) for _ in range(3)}
    assert blind == {f"{players.answer('blind', q)}."}
    assert _ask(fake_openai, "yes-man", q, images[1]) == "Yes."

"""factory_boy factories shared by the test tree."""

import factory
from django.contrib.auth import get_user_model

from annotator.models import Task, TaskQueue
from annotator.platform import roles
from annotator.platform.models import Project

PASSWORD = "correct-horse-battery"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def role(self, create, extracted, **kwargs):
        self.save()
        if extracted:
            roles.grant_role(self, extracted)


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project
        skip_postgeneration_save = True

    name = factory.Sequence(lambda n: f"Project {n}")
    slug = factory.Sequence(lambda n: f"project-{n}")

    @factory.post_generation
    def members(self, create, extracted, **kwargs):
        if extracted:
            self.members.add(*extracted)


def pair_payload(i: int = 0) -> dict:
    return {
        "images": [
            {"url": f"/static/demo/img{i}a.png", "caption": f"A red cube left of a ball {i}"},
            {"url": f"/static/demo/img{i}b.png", "caption": f"A ball left of a red cube {i}"},
        ]
    }


def vqa_payload(i: int = 0) -> dict:
    return {
        "image": {"url": f"/static/demo/img{i}.png"},
        "question": f"Is the cube red? ({i})",
        "choices": ["Yes", "No"],
    }


class QueueFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TaskQueue

    project = factory.SubFactory(ProjectFactory)
    kind = "vqa_choice"
    title = factory.Sequence(lambda n: f"Queue {n}")
    redundancy = 2
    max_redundancy = 2


class TaskFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Task

    queue = factory.SubFactory(QueueFactory)
    payload = factory.Sequence(vqa_payload)
    required = factory.LazyAttribute(lambda t: t.queue.redundancy)

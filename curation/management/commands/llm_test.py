"""Check an LLM provider from the command line: connection, or one recorded generation.

manage.py llm_test                                   # the default provider's connection
manage.py llm_test --provider 3 --template vhexpansion-negation --var question="Is it red?"
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from annotator.platform.models import Project
from curation import gateway
from curation.models import LLMProvider


class Command(BaseCommand):
    help = "Test an LLM provider's connection, or run one generation through the gateway."

    def add_arguments(self, parser):
        parser.add_argument("--provider", type=int, help="LLMProvider id (default: provider_for)")
        parser.add_argument("--project", help="project slug whose default provider to use")
        parser.add_argument("--template", help="run one generation with this template")
        parser.add_argument("--var", action="append", default=[], help="variable name=value")
        parser.add_argument("--seed", type=int)
        parser.add_argument("--logprobs", action="store_true")

    def handle(self, *args, **opts):
        project = None
        if opts["project"]:
            project = Project.objects.filter(slug=opts["project"]).first()
            if project is None:
                raise CommandError(f"No project with slug {opts['project']!r}.")
        if opts["provider"]:
            provider = LLMProvider.objects.filter(pk=opts["provider"]).first()
            if provider is None:
                raise CommandError(f"No LLM provider with id {opts['provider']}.")
        else:
            provider = gateway.provider_for(project)
        if not opts["template"]:
            result = gateway.provider_test_connection(provider)
            self.stdout.write(f"{provider.name}: {result['message']} ({result['latency_ms']} ms)")
            if not result["ok"]:
                raise CommandError("connection test failed")
            return
        variables = {}
        for item in opts["var"]:
            name, sep, value = item.partition("=")
            if not sep:
                raise CommandError(f"--var {item!r}: write name=value.")
            variables[name] = value
        try:
            gen = gateway.generate(
                template=opts["template"],
                variables=variables,
                project=project,
                provider=provider,
                purpose="cli.llm_test",
                seed=opts["seed"],
                logprobs=opts["logprobs"],
            )
        except gateway.TemplateError as exc:
            raise CommandError(str(exc)) from exc
        summary = {
            "generation": gen.pk,
            "status": gen.status,
            "provider": provider.name,
            "offline": gen.is_offline,
            "model": gen.model,
            "template": f"{gen.template_name} v{gen.template_version}",
            "attempts": gen.attempts,
            "latency_ms": gen.latency_ms,
            "tokens": [gen.prompt_tokens, gen.completion_tokens],
            "output": gen.output,
            "error": gen.error,
        }
        self.stdout.write(json.dumps(summary, indent=2, ensure_ascii=False))
        if gen.status != "ok":
            raise CommandError(f"generation failed (recorded as #{gen.pk})")

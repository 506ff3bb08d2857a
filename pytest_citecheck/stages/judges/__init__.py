"""Judge providers: the LLMs that read passages and label a citation.

:func:`make_judge` builds one from ``PROVIDER:MODEL`` (``--citecheck-judge``,
ini ``citecheck_judge``, a claim file's ``judge:``)::

    judge = make_judge("openai:gpt-4o-mini")
    judge = make_judge("anthropic:claude-sonnet-4-6")
    judge = make_judge("ollama:llama3.1:8b")                      # the model may contain ':'
    judge = make_judge("openai-compatible:qwen2.5", base_url="http://127.0.0.1:8000/v1")

Keys and endpoints come from the environment (``environ``, default
``os.environ``):

================== ===================== ======================================= ========
provider           key                   base URL                                key
================== ===================== ======================================= ========
openai             OPENAI_API_KEY        OPENAI_BASE_URL (api.openai.com/v1)      required
anthropic          ANTHROPIC_API_KEY     ANTHROPIC_BASE_URL (api.anthropic.com)   required
ollama             OLLAMA_API_KEY        OLLAMA_HOST (http://127.0.0.1:11434)     optional
openai-compatible  CITECHECK_JUDGE_API_KEY CITECHECK_JUDGE_BASE_URL (no default)  optional
================== ===================== ======================================= ========

Replaying recordings needs no key: pass ``require_key=False`` and the judge
sends no auth header (recordings never hold one).

``temperature`` (ini ``citecheck_judge_temperature``) and ``response_format``
(ini ``citecheck_judge_response_format``) say what to send to models and
servers that refuse the defaults; see :mod:`pytest_citecheck.stages.judges.openai`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import httpx

from pytest_citecheck.core.argtypes import Temperature, parse_temperature
from pytest_citecheck.core.defaults import DEFAULT_JUDGE, RESPONSE_FORMATS
from pytest_citecheck.core.errors import ConfigurationError
from pytest_citecheck.core.providers import PROVIDER_ENV, PROVIDERS
from pytest_citecheck.core.retry import RetryPolicy
from pytest_citecheck.core.terms import NEUTRAL, Terms
from pytest_citecheck.stages.judges.anthropic import AnthropicJudge
from pytest_citecheck.stages.judges.base import Judge, JudgeReply, VersionedJudge
from pytest_citecheck.stages.judges.compat import ServerFormats
from pytest_citecheck.stages.judges.http import HTTPJudge
from pytest_citecheck.stages.judges.ollama import OllamaJudge, normalise_host
from pytest_citecheck.stages.judges.openai import OpenAIJudge
from pytest_citecheck.stages.judges.prompt import (
    PROMPT_VERSION,
    build_messages,
    recorded_prompt_version,
)

__all__ = [
    "DEFAULT_JUDGE",
    "PROMPT_VERSION",
    "PROVIDERS",
    "RESPONSE_FORMATS",
    "AnthropicJudge",
    "HTTPJudge",
    "Judge",
    "JudgeReply",
    "OllamaJudge",
    "OpenAIJudge",
    "ServerFormats",
    "Temperature",
    "VersionedJudge",
    "build_messages",
    "make_judge",
    "parse_judge_spec",
    "parse_temperature",
    "recorded_prompt_version",
]


def parse_judge_spec(spec: str) -> tuple[str, str]:
    """``"PROVIDER:MODEL"`` -> ``(provider, model)``; the model may contain ``:``.

    Raises ValueError (a usage error for the plugin) naming the known providers.
    """
    provider, sep, model = spec.strip().partition(":")
    provider, model = provider.strip().lower(), model.strip()
    known = ", ".join(PROVIDERS)
    if provider not in PROVIDERS:
        raise ValueError(
            f"unknown judge provider {provider!r} in {spec!r}: use PROVIDER:MODEL "
            f"with PROVIDER one of {known} (e.g. {DEFAULT_JUDGE!r})"
        )
    if not sep or not model:
        raise ValueError(
            f"judge {spec!r} names no model: use {provider}:MODEL (e.g. {DEFAULT_JUDGE!r}); "
            f"providers: {known}"
        )
    return provider, model


def make_judge(
    spec: str,
    *,
    environ: Mapping[str, str] | None = None,
    base_url: str | None = None,
    require_key: bool = True,
    retry: RetryPolicy | None = None,
    timeout: float = 60.0,
    client: httpx.Client | None = None,
    temperature: Temperature = "auto",
    response_format: str = "auto",
    terms: Terms = NEUTRAL,
    formats: ServerFormats | None = None,
) -> HTTPJudge:
    """Build the judge ``spec`` names.

    ``base_url`` overrides the provider's base-URL variable (for ``ollama``
    it is the host). ``require_key=False`` is for replay: a missing key is
    then fine and no auth header is sent. Raises ValueError for a bad spec and
    :class:`ConfigurationError` (naming the variable, never a value) for a
    missing key or, for ``openai-compatible``, a missing base URL.
    ``temperature`` applies to the OpenAI wire and Ollama (Anthropic is sent
    none), ``response_format`` (``auto``, ``json_schema``, ``json_object``) to
    the OpenAI wire. ``terms`` names the options in messages (the front end's words).
    ``formats``: what the run's servers were found to take (shared by the run's
    judges, so ``auto`` learns a server's response format once; None: this judge's own).
    """
    if response_format not in RESPONSE_FORMATS:
        raise ValueError(
            f"response format {response_format!r}: use one of {', '.join(RESPONSE_FORMATS)}"
        )
    provider, model = parse_judge_spec(spec)
    env = os.environ if environ is None else environ
    key_env, url_env, default_url, key_required = PROVIDER_ENV[provider]
    api_key = env.get(key_env) or None
    if api_key is None and key_required and require_key:
        raise ConfigurationError(
            f"The {provider} judge needs an API key: set {key_env}"
            f"{' (replaying recordings needs none)' if terms.replay else ''}."
        )
    base = base_url or env.get(url_env) or default_url
    if not base:
        raise ConfigurationError(
            f"The {provider} judge needs the base URL of its server: set "
            f"{terms.option('judge_base_url')} (or {url_env}) to it, e.g. "
            "http://127.0.0.1:8080/v1 for llama.cpp's llama-server or "
            "http://127.0.0.1:8000/v1 for vLLM."
            + (
                " Replaying recordings needs the same URL they were recorded against."
                if terms.replay
                else ""
            )
        )
    common: dict[str, Any] = {
        "provider": provider,
        "model": model,
        "key_env": key_env,
        "api_key": api_key,
        "retry": retry or RetryPolicy(),
        "timeout": timeout,
        "client": client,
        "terms": terms,
    }
    if provider == "anthropic":
        return AnthropicJudge(url=f"{base.rstrip('/')}/v1/messages", **common)
    if provider == "ollama":
        return OllamaJudge(
            url=f"{normalise_host(base)}/api/chat", temperature=temperature, **common
        )
    return OpenAIJudge(
        url=f"{base.rstrip('/')}/chat/completions",
        temperature=temperature,
        response_format=response_format,
        formats=formats if formats is not None else ServerFormats(),
        **common,
    )

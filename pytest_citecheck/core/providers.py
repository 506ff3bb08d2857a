"""The environment variables citecheck reads: the Crawlbase tokens and each judge provider's.

Plain data with no imports, so ``pytest --help`` can list it without loading
httpx or any provider module; :func:`pytest_citecheck.stages.judges.make_judge`,
the Crawling API fetcher and :data:`pytest_citecheck.core.secrets.SECRET_ENV_VARS`
read the same tables.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

TokenKind = Literal["normal", "javascript"]
# The Crawlbase tokens the fetcher (and the Storage API) reads.
TOKEN_ENV: dict[TokenKind, str] = {"normal": "CRAWLBASE_TOKEN", "javascript": "CRAWLBASE_JS_TOKEN"}


def token_kind(value: str | None) -> TokenKind | None:
    """``value`` as a token kind when it names one (a recorded fetch's, an audit row's)."""
    if value == "normal":
        return "normal"
    if value == "javascript":
        return "javascript"
    return None


# The key clients send to ``citecheck serve`` (pytest_citecheck.frontends.service).
SERVICE_KEY_ENV = "CITECHECK_SERVICE_KEY"


class ProviderEnv(NamedTuple):
    key_env: str
    url_env: str
    default_url: str | None
    key_required: bool


PROVIDER_ENV: dict[str, ProviderEnv] = {
    "openai": ProviderEnv("OPENAI_API_KEY", "OPENAI_BASE_URL", "https://api.openai.com/v1", True),
    "anthropic": ProviderEnv(
        "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "https://api.anthropic.com", True
    ),
    "ollama": ProviderEnv("OLLAMA_API_KEY", "OLLAMA_HOST", "http://127.0.0.1:11434", False),
    "openai-compatible": ProviderEnv(
        "CITECHECK_JUDGE_API_KEY", "CITECHECK_JUDGE_BASE_URL", None, False
    ),
}
PROVIDERS = tuple(PROVIDER_ENV)


def provider_variables() -> list[str]:
    """Each provider with its key and URL variables, ``[optional]`` ones bracketed."""
    parts = []
    for name, env in PROVIDER_ENV.items():
        key = env.key_env if env.key_required else f"[{env.key_env}]"
        url = env.url_env if env.default_url is None else f"[{env.url_env}]"
        parts.append(f"{name} {key} {url}")
    return parts


def providers_help() -> str:
    """The providers and their variables for ``pytest --help`` ([optional])."""
    return (
        "providers and their environment variables ([optional]): "
        + "; ".join(provider_variables())
        + "."
    )
